"""POST /servers: validate, store build requests, cast to the conductor.

Its body is read in :mod:`~nimbus.api.handlers.server_create_body`, its
quotas checked in :mod:`~nimbus.api.handlers.server_create_quota`.
:func:`request_spec_for` is shared with the scheduler dry run.
"""

from oslo_log import log as logging
from oslo_utils import uuidutils

from nimbus import extra_specs
from nimbus.api import policies
from nimbus.api import scheduler_cache
from nimbus.api import util
from nimbus.api.handlers import server_create_body as body_mod
from nimbus.api.handlers import server_create_quota as quota
from nimbus.api.objects import flavors as flavor_obj
from nimbus.api.objects import server_groups as group_obj
from nimbus.api.objects import servers as server_obj
from nimbus.api.schemas import servers as schema
from nimbus.common import instance_states as states
from nimbus.common.clients import accelerator
from nimbus.common.objects import RequestSpec
from nimbus.common.objects import ServerGroupInfo
from nimbus.common.wsgi import errors
from nimbus.common.wsgi import json_body

LOG = logging.getLogger(__name__)


def _group(req, hints, new_uuids):
    uuid = hints.get('group')
    if uuid is None:
        return None
    deps = util.deps(req)
    try:
        group = group_obj.get(deps.api_db, uuid)
    except group_obj.GroupNotFound as exc:
        raise util.bad_request(
            'Invalid scheduler hint group: server group '
            '%s could not be found.' % uuid
        ) from exc
    ctx = util.ctx(req)
    if not ctx.is_admin and group['project_id'] != ctx.project_id:
        raise util.bad_request(
            'Invalid scheduler hint group: server group '
            '%s could not be found.' % uuid
        )
    hosts = server_obj.hosts_of(deps.api_db, deps.cells, group['members'])
    return {
        'uuid': group['uuid'],
        'name': group['name'],
        'policy': group['policy'],
        'rules': group['rules'],
        'members': group['members'] + list(new_uuids),
        'hosts': hosts,
    }


def _check_image_properties(image):
    if image is None:
        return
    try:
        extra_specs.validate_image_properties(image['properties'] or {})
    except extra_specs.ExtraSpecValidationError as exc:
        raise util.bad_request('Image %s: %s' % (image['id'], exc)) from exc


def device_profile_groups(req, flavor):
    """The request groups of the flavor's ``accel:device_profile`` (requester
    ids ``device_profile_<N>``), so the scheduler asks placement for the
    accelerators too. A server must not boot without its accelerators: no
    accelerator service, an unknown profile or a malformed one is a 400."""
    name = flavor['extra_specs'].get('accel:device_profile')
    if not name:
        return []
    client = util.deps(req).accelerator
    if client is None:
        raise util.bad_request(
            'Flavor %s requests device profile %s but no accelerator service '
            'is configured.' % (flavor['flavorid'], name)
        )
    try:
        return client.get_device_request_groups(util.ctx(req), name)
    except accelerator.DeviceProfileError as exc:
        raise util.bad_request(
            'Flavor %s requests device profile %s: %s'
            % (flavor['flavorid'], name, exc)
        ) from exc
    except accelerator.AcceleratorError as exc:
        LOG.warning('Device profile %s: %s', name, exc)
        raise errors.HTTPError(
            503,
            'The accelerator service could not '
            'resolve device profile %s.' % name,
        ) from exc


def request_spec_for(
    req,
    flavor,
    image,
    zone,
    hints,
    uuids,
    min_count=1,
    force_host=None,
    force_node=None,
    is_bfv=False,
    extra=None,
):
    """The RequestSpec (docs/contracts.md) for a request."""
    ctx = util.ctx(req)
    _check_image_properties(image)
    requested_resources = device_profile_groups(req, flavor)
    spec = {
        'instance_uuids': list(uuids),
        'num_instances': max(len(uuids), 1),
        'min_count': min_count,
        'project_id': ctx.project_id,
        'user_id': ctx.user_id,
        'flavor': flavor_obj.spec_dict(flavor),
        'image': None
        if image is None
        else {
            'id': image['id'],
            'name': image['name'],
            'properties': dict(image['properties']),
        },
        'availability_zone': zone,
        'scheduler_hints': hints,
        'instance_group': _group(req, hints, uuids),
        'requested_resources': requested_resources,
        'device_profile': flavor['extra_specs'].get('accel:device_profile'),
        'is_bfv': is_bfv,
        'ignore_hosts': [],
        'force_hosts': [force_host] if force_host else [],
        'force_nodes': [force_node] if force_node else [],
        'retry': None,
        'request_id': ctx.request_id,
    }
    spec.update(extra or {})
    return RequestSpec.from_primitive(spec)


def create(req, resp):
    ctx = util.ctx(req)
    util.authorize(req, policies.SERVERS % 'create')
    version = util.version(req)
    body = json_body(req, schema.create_schema(version))
    server = body['server']
    hints = body_mod.normalise_hints(
        body.get('os:scheduler_hints')
        or body.get('OS-SCH-HNT:scheduler_hints')
    )
    min_count, max_count = body_mod.counts(req, server)
    deps = util.deps(req)
    # What the create reads before it writes, in one transaction of the
    # API database: the flavor, the image, the key pair, the zone, the
    # quota limits and usage (under the project's lock, see quota).
    with deps.quota_locks(ctx.project_id), deps.api_db.reads():
        flavor = body_mod.lookup_flavor(req, server['flavorRef'])
        image, is_bfv = body_mod.boot_image(req, server)
        body_mod.check_image_fits(flavor, image, is_bfv)
        body_mod.check_key_and_groups(req, server)
        zone, force_host, force_node = body_mod.zone_of(
            req, server.get('availability_zone')
        )
        snap = quota.read_usage(req)
    extra = {}
    if server.get('host') or server.get('hypervisor_hostname'):
        util.authorize(req, policies.SERVERS % 'create:forced_host')
        extra['requested_destination'] = {
            'host': server.get('host'),
            'node': server.get('hypervisor_hostname'),
        }
    max_count = quota.allowed_count(
        req, server, flavor, min_count, max_count, snap
    )
    uuids = [uuidutils.generate_uuid() for _ in range(max_count)]
    spec = request_spec_for(
        req,
        flavor,
        image,
        zone,
        hints,
        uuids,
        min_count,
        force_host,
        force_node,
        is_bfv,
        extra,
    )
    quota.check_group_members(req, spec.instance_group, len(uuids), snap)
    reservation_id = 'r-' + util.generate_password(8).lower()
    now = util.isotime(util.utcnow())
    instances = []
    for index, uuid in enumerate(uuids):
        name = server['name']
        if max_count > 1:
            name = '%s-%d' % (server['name'], index + 1)
        instances.append(
            {
                'uuid': uuid,
                'display_name': name,
                'project_id': ctx.project_id,
                'user_id': ctx.user_id,
                'vm_state': states.BUILDING,
                'task_state': states.SCHEDULING,
                'power_state': 0,
                'flavor': flavor_obj.spec_dict(flavor),
                'image_ref': image['id'] if image else None,
                'availability_zone': zone,
                'metadata': server.get('metadata') or {},
                'reservation_id': reservation_id,
                'launch_index': index,
                'description': server.get('description'),
                'key_name': server.get('key_name'),
                'hostname': server.get('hostname') or name,
                'tags': server.get('tags') or [],
                'access_ip_v4': util.access_ip(
                    server.get('accessIPv4'), 'accessIPv4'
                ),
                'access_ip_v6': util.access_ip(
                    server.get('accessIPv6'), 'accessIPv6'
                ),
                'disk_config': server.get('OS-DCF:diskConfig', 'MANUAL'),
                'security_groups': [{'name': 'default'}],
                'created_at': now,
                'updated_at': None,
            }
        )
    quota.write_and_recheck(
        req, instances, spec, hints.get('group'), flavor, snap
    )
    group = spec.instance_group
    if group is not None:
        scheduler_cache.server_group_changed(
            req,
            ServerGroupInfo(
                **{
                    k: getattr(group, k)
                    for k in ('uuid', 'name', 'policy', 'rules', 'members')
                }
            ),
        )
    try:
        deps.conductor_api.schedule_and_build_instances(ctx, spec, uuids)
    except Exception as exc:
        LOG.exception('Could not reach the conductor for %s', uuids)
        server_obj.undo_build_requests(deps.api_db, uuids)
        raise errors.HTTPError(
            503, 'The conductor could not be reached; no server was created.'
        ) from exc
    resp.status = 202
    return_reservation = server.get('return_reservation_id')
    if isinstance(return_reservation, str):
        return_reservation = util.boolish(
            return_reservation, 'return_reservation_id'
        )
    if return_reservation:
        resp.media = {'reservation_id': reservation_id}
        return
    # Nova's create response: no name, no status (tempest's create_server
    # schema allows only these keys).
    first = {'id': uuids[0], 'links': util.links(req, 'servers', uuids[0])}
    first.update(
        {
            'OS-DCF:diskConfig': instances[0]['disk_config'],
            'security_groups': instances[0]['security_groups'],
        }
    )
    if deps.conf.api.enable_instance_password:
        first['adminPass'] = (
            server.get('adminPass') or util.generate_password()
        )
    resp.set_header('Location', first['links'][0]['href'])
    resp.media = {'server': first}
