"""POST /servers/{id}/action: the actions that stay on the server's host.

One body names one action (``{"os-stop": null}``); its value is checked
against the action's schema (:mod:`nimbus.api.schemas.server_actions`),
then the server is found and the action's policy (Nova's names) checked
against its project. An action the compute carries out takes its task with
a compare-and-swap and starts its instance action in the same transaction
(:func:`nimbus.api.objects.server_actions.begin`), then casts to the host;
the answer is 202 and the compute moves the server to its final state.
A server in a state the action does not start from, or with a task under
way, is a 409 (conflictingRequest), as a locked server is for anyone but
an admin. The rebuild is in :mod:`nimbus.api.handlers.server_rebuild`.
"""

from oslo_log import log as logging
from oslo_utils import uuidutils

from nimbus.api import policies_server_actions as policies
from nimbus.api import util
from nimbus.api.handlers import action_steps
from nimbus.api.handlers import server_backup
from nimbus.api.handlers import server_live_migrate
from nimbus.api.handlers import server_rebuild
from nimbus.api.handlers import server_resize
from nimbus.api.handlers import server_shelve
from nimbus.api.handlers import servers
from nimbus.api.objects import server_actions as action_obj
from nimbus.api.objects import snapshots
from nimbus.api.schemas import server_actions as schema
from nimbus.common import instance_states as states
from nimbus.common.wsgi import json_body

LOG = logging.getLogger(__name__)


def _simple(action_name, rule, recorded_as, api_name, method):
    """The handler of an action with no body that the compute carries out
    with ``method`` of its rpcapi."""

    def handle(req, resp, server_id, value):
        record = action_steps.server_for(req, server_id, rule)
        action_steps.check_lock(req, record)
        action_steps.begin_and_cast(
            req,
            record,
            action_name,
            recorded_as,
            api_name,
            lambda api, ctx, host, uuid, rid: getattr(api, method)(
                ctx, host, uuid, rid
            ),
        )
        resp.status = 202

    handle.__name__ = api_name
    return handle


# -- actions -----------------------------------------------------------------


def reboot(req, resp, server_id, value):
    record = action_steps.server_for(req, server_id, policies.REBOOT)
    action_steps.check_lock(req, record)
    reboot_type = value['type'].upper()
    action_steps.begin_and_cast(
        req,
        record,
        'reboot_hard' if reboot_type == 'HARD' else 'reboot',
        'reboot',
        'reboot',
        lambda api, ctx, host, uuid, rid: api.reboot_instance(
            ctx, host, uuid, rid, reboot_type
        ),
    )
    resp.status = 202


def rescue(req, resp, server_id, value):
    record = action_steps.server_for(req, server_id, policies.RESCUE)
    action_steps.check_lock(req, record)
    value = value or {}
    image_ref = value.get('rescue_image_ref') or record.get('image_ref')
    password = value.get('adminPass') or util.generate_password()
    action_steps.begin_and_cast(
        req,
        record,
        'rescue',
        'rescue',
        'rescue',
        lambda api, ctx, host, uuid, rid: api.rescue_instance(
            ctx, host, uuid, rid, image_ref
        ),
    )
    resp.status = 200
    resp.media = {'adminPass': password}


def change_password(req, resp, server_id, value):
    record = action_steps.server_for(req, server_id, policies.ADMIN_PASSWORD)
    action_steps.check_lock(req, record)
    password = value['adminPass']
    action_steps.begin_and_cast(
        req,
        record,
        'changePassword',
        'changePassword',
        'changePassword',
        lambda api, ctx, host, uuid, rid: api.set_admin_password(
            ctx, host, uuid, rid, password
        ),
    )
    resp.status = 202


def lock(req, resp, server_id, value):
    record = action_steps.server_for(req, server_id, policies.LOCK % 'lock')
    ctx = util.ctx(req)
    locked_by = 'owner' if ctx.project_id == record['project_id'] else 'admin'
    reason = (value or {}).get('locked_reason')
    if record['cell'] is None:
        raise util.conflict(
            'Instance %s is not ready to be locked.' % record['uuid']
        )
    if not action_obj.set_lock(
        util.deps(req).cells, record, locked_by, reason, ctx
    ):
        raise util.not_found('Instance', server_id)
    resp.status = 202


def unlock(req, resp, server_id, value):
    target = {}
    record = action_steps.server_for(req, server_id, policies.LOCK % 'unlock')
    ctx = util.ctx(req)
    expected = 'owner' if ctx.project_id == record['project_id'] else 'admin'
    if record.get('locked_by') and record['locked_by'] != expected:
        # Unlocking what another kind of user locked needs the override.
        target = {
            'project_id': record['project_id'],
            'user_id': record.get('user_id'),
        }
        util.authorize(req, policies.LOCK % 'unlock:unlock_override', target)
    if record['cell'] is None:
        raise util.conflict(
            'Instance %s is not ready to be unlocked.' % record['uuid']
        )
    if not action_obj.set_lock(util.deps(req).cells, record, None, None, ctx):
        raise util.not_found('Instance', server_id)
    resp.status = 202


def reset_state(req, resp, server_id, value):
    record = action_steps.server_for(req, server_id, policies.RESET_STATE)
    if record['cell'] is None:
        raise util.conflict(
            'Instance %s has no cell yet; its state cannot be reset.'
            % record['uuid']
        )
    if not action_obj.reset_state(
        util.deps(req).cells, record, value['state']
    ):
        raise util.conflict(
            'Instance %s changed state meanwhile; try again.' % record['uuid']
        )
    resp.status = 202


def restore(req, resp, server_id, value):
    """Bring a soft-deleted server back (its compute starts it)."""
    record = action_steps.server_for(
        req, server_id, policies.DEFERRED_DELETE % 'restore'
    )
    action_steps.begin_and_cast(
        req,
        record,
        'restore',
        'restore',
        'restore',
        lambda api, ctx, host, uuid, rid: api.restore_instance(
            ctx, host, uuid, rid
        ),
        before_cast=lambda: action_obj.restored(util.deps(req).api_db, record),
    )
    resp.status = 202


def force_delete(req, resp, server_id, value):
    """Delete a soft-deleted server at once (as a delete of a server in
    any other state would)."""
    record = action_steps.server_for(
        req, server_id, policies.DEFERRED_DELETE % 'force'
    )
    action_steps.check_lock(req, record)
    if record.get('vm_state') != states.SOFT_DELETED:
        raise util.conflict(
            "Cannot 'forceDelete' instance %s while it is in vm_state %s"
            % (record['uuid'], record.get('vm_state'))
        )
    servers.delete(req, resp, server_id)
    resp.status = 202


def create_image(req, resp, server_id, value):
    """Snapshot the server into a new private image of its project: the
    image (the base image's formats and properties, the body's metadata,
    ``image_type`` snapshot, ``instance_uuid``, ``base_image_ref``) is
    made through the image records this API serves under /image when the
    task is taken; the compute then snapshots the guest into it."""
    record = action_steps.server_for(req, server_id, policies.CREATE_IMAGE)
    deps = util.deps(req)
    image_id = uuidutils.generate_uuid()

    def make_image():
        snapshots.create(deps.api_db, record, image_id, value)

    action_steps.begin_and_cast(
        req,
        record,
        'createImage',
        'createImage',
        'createImage',
        lambda api, ctx, host, uuid, rid: api.snapshot_instance(
            ctx, host, uuid, rid, image_id
        ),
        before_cast=make_image,
    )
    action_steps.image_accepted(req, resp, image_id)


def console_output(req, resp, server_id, value):
    record = action_steps.server_for(req, server_id, policies.CONSOLE_OUTPUT)
    length = value.get('length')
    if length is not None:
        length = int(length)
        if length < -1:
            raise util.bad_request('length must be -1 or more')
        if length == -1:
            length = None
    action_steps.check_placed(record, 'os-getConsoleOutput')
    deps = util.deps(req)
    text = action_steps.ask_compute(
        record,
        'the console output',
        lambda: deps.compute_api(record['cell']).get_console_output(
            util.ctx(req), record['host'], record['uuid'], length
        ),
    )
    resp.media = {'output': text}


# Body key -> handler(req, resp, server_id, value).
ACTIONS = {
    'os-stop': _simple('stop', policies.STOP, 'stop', 'stop', 'stop_instance'),
    'os-start': _simple(
        'start', policies.START, 'start', 'start', 'start_instance'
    ),
    'reboot': reboot,
    'pause': _simple(
        'pause', policies.PAUSE % 'pause', 'pause', 'pause', 'pause_instance'
    ),
    'unpause': _simple(
        'unpause',
        policies.PAUSE % 'unpause',
        'unpause',
        'unpause',
        'unpause_instance',
    ),
    'suspend': _simple(
        'suspend',
        policies.SUSPEND % 'suspend',
        'suspend',
        'suspend',
        'suspend_instance',
    ),
    'resume': _simple(
        'resume',
        policies.SUSPEND % 'resume',
        'resume',
        'resume',
        'resume_instance',
    ),
    'rescue': rescue,
    'unrescue': _simple(
        'unrescue',
        policies.UNRESCUE,
        'unrescue',
        'unrescue',
        'unrescue_instance',
    ),
    'lock': lock,
    'unlock': unlock,
    'os-resetState': reset_state,
    'os-getConsoleOutput': console_output,
    'changePassword': change_password,
    'rebuild': server_rebuild.rebuild,
    'createImage': create_image,
    **server_backup.ACTIONS,
    'restore': restore,
    'forceDelete': force_delete,
    # The moves of nimbus.api.handlers.server_shelve (issue 24, section 2).
    **server_shelve.ACTIONS,
    **server_resize.ACTIONS,
    **server_live_migrate.ACTIONS,
}


def action(req, resp, server_id):
    body = json_body(req)
    if not isinstance(body, dict) or not body:
        raise util.bad_request(
            'The action body must be a JSON object naming one action.'
        )
    names = [name for name in body if name in ACTIONS]
    if not names:
        raise util.bad_request(
            'There is no such action: %s' % ', '.join(sorted(body))
        )
    if len(body) > 1:
        raise util.bad_request(
            'One action per request; got %s' % ', '.join(sorted(body))
        )
    name = names[0]
    util.validate_data(
        body[name], schema.action_schema(name, util.version(req))
    )
    ACTIONS[name](req, resp, server_id, body[name])
