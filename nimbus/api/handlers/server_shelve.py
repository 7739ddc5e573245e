"""Shelve, shelveOffload, unshelve and evacuate (POST
/servers/{id}/action), as Nova's v2.1 API; the flows are in
:mod:`nimbus.conductor.shelve` and :mod:`nimbus.compute.shelve`, the
state machine in docs/moves-shelve-evacuate.md.

- ``shelve`` takes ``shelving`` and makes the snapshot image
  ``<name>-shelved`` (its id kept on the instance for the unshelve), then
  casts to the server's host.
- ``shelveOffload`` (admin) takes ``shelving_offloading`` on a SHELVED
  server and casts to its host.
- ``unshelve`` takes ``unshelving`` and casts to the super conductor; a
  zone (2.77), a host (2.91, admin) or ``availability_zone: null`` (2.91,
  unpin) only for a SHELVED_OFFLOADED server (else 409); an unknown zone
  or host, or a host outside the zone, is a 400.
- ``evacuate`` (admin) only when the server's compute service is down
  (or forced down); creates the migration (type evacuation, accepted) in
  the transaction that takes ``rebuilding`` and casts to the super
  conductor.
"""

from oslo_log import log as logging
from oslo_utils import uuidutils

from nimbus.api import policies_server_moves_shelve as policies
from nimbus.api import util
from nimbus.api.handlers import action_steps
from nimbus.api.objects import server_actions as action_obj
from nimbus.api.objects import server_moves
from nimbus.api.objects import snapshots
from nimbus.common import instance_states as states
from nimbus.common.wsgi import errors

LOG = logging.getLogger(__name__)


def shelve(req, resp, server_id, value):
    record = action_steps.server_for(req, server_id, policies.SHELVE)
    action_steps.check_lock(req, record)
    deps = util.deps(req)
    image_id = uuidutils.generate_uuid()

    def make_image():
        name = '%s-shelved' % (record.get('display_name') or record['uuid'])
        snapshots.create(
            deps.api_db, record, image_id, {'name': name[:255], 'metadata': {}}
        )

    try:
        action_steps.begin_and_cast(
            req,
            record,
            'shelve',
            'shelve',
            'shelve',
            lambda api, ctx, host, uuid, rid: api.shelve_instance(
                ctx, host, uuid, rid, image_id
            ),
            then=server_moves.keep_image(record['uuid'], image_id),
            before_cast=make_image,
        )
    except errors.HTTPError as exc:
        if exc.status_int == 503:  # the task was given back: so is the image
            server_moves.drop_image(deps.api_db, image_id)
        raise
    resp.status = 202


def shelve_offload(req, resp, server_id, value):
    record = action_steps.server_for(req, server_id, policies.SHELVE_OFFLOAD)
    action_steps.check_lock(req, record)
    action_steps.begin_and_cast(
        req,
        record,
        'shelveOffload',
        'shelveOffload',
        'shelveOffload',
        lambda api, ctx, host, uuid, rid: api.shelve_offload_instance(
            ctx, host, uuid, rid
        ),
    )
    resp.status = 202


def _begin(req, record, name, then=None):
    """Take the action's task and start its instance action (409/404 as
    the other actions)."""
    deps = util.deps(req)
    if record['cell'] is None:
        raise util.conflict(
            "Cannot '%s' instance %s while it is in vm_state building"
            % (name, record['uuid'])
        )
    with action_steps.beginning(record):
        action_obj.begin(
            deps.cells, record, name, util.ctx(req), name, name, then
        )


def _cast(req, record, name, cast):
    """``cast(conductor_api, ctx)``; a cast that cannot be sent gives the
    task back (503)."""
    with action_steps.sending(
        req,
        record,
        name,
        name,
        'The conductor could not be told to %s the server.' % name,
    ):
        cast(util.deps(req).conductor_api, util.ctx(req))


def _unshelve_target(req, record, value):
    """``(zone, host, unpin)`` of an unshelve body, checked as Nova."""
    deps = util.deps(req)
    zone_given = 'availability_zone' in value
    zone = value.get('availability_zone')
    host = value.get('host')
    if host:
        util.authorize(
            req,
            policies.UNSHELVE_TO_HOST,
            {
                'project_id': record['project_id'],
                'user_id': record.get('user_id'),
            },
        )
    if (zone_given or host) and (
        record.get('vm_state') != states.SHELVED_OFFLOADED
    ):
        raise util.conflict(
            "Cannot 'unshelve' instance %s with an availability_zone or a "
            'host while it is in vm_state %s (only shelved_offloaded)'
            % (record['uuid'], record.get('vm_state'))
        )
    if zone is not None and zone not in server_moves.known_zones(
        deps.api_db, deps.conf
    ):
        raise util.bad_request(
            'The requested availability zone is not available: %s' % zone
        )
    if host:
        up = server_moves.is_up(
            deps.cells, host, deps.conf.service_down_time, util.utcnow()
        )
        if up is None:
            raise util.bad_request('Compute host %s not found.' % host)
        wanted = zone if zone_given else record.get('pinned_availability_zone')
        if wanted and wanted not in server_moves.host_zones(
            deps.api_db, deps.conf, host
        ):
            raise util.bad_request(
                'Host %s is not in availability zone %s.' % (host, wanted)
            )
    return zone, host, zone_given and zone is None


def unshelve(req, resp, server_id, value):
    record = action_steps.server_for(req, server_id, policies.UNSHELVE)
    action_steps.check_lock(req, record)
    zone, host, unpin = _unshelve_target(req, record, value or {})
    _begin(req, record, 'unshelve')
    _cast(
        req,
        record,
        'unshelve',
        lambda api, ctx: api.unshelve_instance(
            ctx, record['uuid'], ctx.request_id, zone, host, unpin
        ),
    )
    resp.status = 202


def evacuate(req, resp, server_id, value):
    record = action_steps.server_for(req, server_id, policies.EVACUATE)
    action_steps.check_lock(req, record)
    value = value or {}
    deps = util.deps(req)
    version = util.version(req)
    host = value.get('host')
    action_steps.check_placed(record, 'evacuate')
    now = util.utcnow()
    down_time = deps.conf.service_down_time
    if host:
        if server_moves.is_up(deps.cells, host, down_time, now) is None:
            raise util.not_found('Compute host', host)
        if host == record['host']:
            raise util.bad_request("The target host can't be the same one.")
    if server_moves.is_up(deps.cells, record['host'], down_time, now):
        raise util.bad_request(
            'Compute service of %s is still in use.' % record['host']
        )
    password = value.get('adminPass') or util.generate_password()
    power_on = version < (2, 95) and record.get('vm_state') != states.STOPPED
    ctx = util.ctx(req)
    migration_uuid = uuidutils.generate_uuid()
    _begin(
        req,
        record,
        'evacuate',
        then=server_moves.new_evacuation(record, ctx, migration_uuid, host),
    )
    _cast(
        req,
        record,
        'evacuate',
        lambda api, c: api.evacuate_instance(
            c, record['uuid'], c.request_id, migration_uuid, power_on
        ),
    )
    resp.status = 200
    if version < (2, 14):
        resp.media = {'adminPass': password}


ACTIONS = {
    'shelve': shelve,
    'shelveOffload': shelve_offload,
    'unshelve': unshelve,
    'evacuate': evacuate,
}
