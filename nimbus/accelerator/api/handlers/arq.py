"""/v2/accelerator_requests: create from a device profile, list (by
instance; ``bind_state=resolved`` answers 423 while any is binding), show,
bind and unbind by JSON patch (202), delete by ``arqs=`` or ``instance=``.
"""

import orjson
from oslo_log import log as logging

from nimbus.accelerator import states
from nimbus.accelerator.api import policies
from nimbus.accelerator.api.handlers import util
from nimbus.accelerator.api.schemas import arq as schema
from nimbus.accelerator.objects import arq as arq_obj
from nimbus.accelerator.objects import device_profile as dp_obj
from nimbus.common.wsgi import errors

LOG = logging.getLogger(__name__)

NOUN = 'accelerator_requests'


def _handle_info(text):
    if not text:
        return None
    try:
        info = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {'attach_info': text}
    return info if isinstance(info, dict) else {'attach_info': text}


def render(req, arq):
    """Cyborg's ARQ, at every microversion: ``project_id`` and
    ``attach_handle_uuid`` included, ``attach_handle_type`` ``""`` and
    ``attach_handle_info`` ``{}`` until bound."""
    body = {
        key: arq[key]
        for key in (
            'uuid',
            'state',
            'device_profile_name',
            'device_profile_group_id',
            'hostname',
            'device_rp_uuid',
            'instance_uuid',
            'project_id',
            'attach_handle_uuid',
        )
    }
    body['attach_handle_type'] = arq['attach_handle_type'] or ''
    body['attach_handle_info'] = _handle_info(arq['attach_handle_info']) or {}
    if arq['state'] == states.BIND_FAILED:
        # Beyond Cyborg, on a failed bind only (every other ARQ keeps
        # Cyborg's exact fields): why, what failed on which host, so the
        # compute's fault can say it.
        body['failure_reason'] = arq.get('failure_reason')
    body['links'] = util.link(req, NOUN, arq['uuid'])
    body.update(util.times(arq))
    return body


def _visible(state, req, arq):
    if util.may(state, req, policies.ARQ % 'all_projects'):
        return True
    return arq['project_id'] == util.ctx(req).project_id


def create(state, req, resp):
    util.authorize(state, req, policies.ARQ % 'create')
    body = util.json_body(req, schema.CREATE)
    name = body['device_profile_name']
    with util.lookup(dp_obj.NotFound, 'Device profile', name):
        profile = dp_obj.get_by_name(state.adb, name)
    arqs = arq_obj.create_for_profile(
        state.adb, profile, util.ctx(req).project_id
    )
    util.send(resp, {'arqs': [render(req, a) for a in arqs]}, 201)


def list_arqs(state, req, resp):
    util.authorize(state, req, policies.ARQ % 'get_all')
    params = util.query(req, {'instance', 'bind_state'})
    instance = params.get('instance')
    if instance is not None:
        util.uuid_param('instance', instance)
    bind_state = params.get('bind_state')
    if bind_state is not None and bind_state != 'resolved':
        raise util.bad_request(
            "bind_state must be 'resolved', not %r" % bind_state
        )
    if bind_state and instance is None:
        raise util.bad_request("bind_state=resolved needs 'instance'")
    project = (
        None
        if util.may(state, req, policies.ARQ % 'all_projects')
        else util.ctx(req).project_id
    )
    arqs = arq_obj.list_arqs(
        state.adb, instance_uuid=instance, project_id=project
    )
    if bind_state:
        binding = [
            a['uuid'] for a in arqs if a['state'] not in states.RESOLVED
        ]
        if binding:
            raise errors.HTTPError(
                423,
                'Accelerator requests of instance %s are still being '
                'bound: %s' % (instance, ', '.join(binding)),
            )
    util.send(resp, {'arqs': [render(req, a) for a in arqs]})


def show(state, req, resp, uuid):
    util.authorize(state, req, policies.ARQ % 'get_one')
    util.uuid_param('uuid', uuid)
    try:
        arq = arq_obj.get(state.adb, uuid)
    except arq_obj.NotFound:
        arq = None
    if arq is None or not _visible(state, req, arq):
        raise util.not_found(
            'Accelerator request %s could not be found' % uuid
        )
    util.send(resp, render(req, arq))


def _bindings(patch):
    """``{uuid: ops}`` -> (binds ``{uuid: fields}``, unbinds [uuid])."""
    binds, unbinds = {}, []
    for uuid, ops in patch.items():
        kinds = {op['op'] for op in ops}
        if len(kinds) != 1:
            raise util.bad_request(
                'Accelerator request %s: a patch either '
                'adds (binds) or removes (unbinds), not '
                'both' % uuid
            )
        if kinds == {'remove'}:
            unbinds.append(uuid)
            continue
        fields = {}
        for op in ops:
            field = op['path'][1:]
            if 'value' not in op:
                raise util.bad_request(
                    'Accelerator request %s: op add of '
                    "'%s' has no value" % (uuid, op['path'])
                )
            if field in fields:
                raise util.bad_request(
                    "Accelerator request %s: '%s' is "
                    'given twice' % (uuid, op['path'])
                )
            fields[field] = op['value']
        missing = [f for f in schema.BIND_FIELDS if f not in fields]
        if missing:
            raise util.bad_request(
                'Accelerator request %s: binding needs '
                '%s' % (uuid, ', '.join('/' + f for f in missing))
            )
        for field in ('device_rp_uuid', 'instance_uuid'):
            util.uuid_param(field, fields[field])
        binds[uuid] = fields
    return binds, unbinds


def update(state, req, resp):
    """Bind (op add of hostname, device_rp_uuid, instance_uuid) or unbind
    (op remove): the binds are recorded as BindStarted and the binder
    programs the devices; the answer is 202 at once."""
    util.authorize(state, req, policies.ARQ % 'update')
    patch = util.json_body(req, schema.patch_schema(util.version(req)))
    _apply(state, req, patch)
    util.send(resp, None, 202)


def update_one(state, req, resp, uuid):
    """``PATCH /v2/accelerator_requests/{uuid}``: what openstacksdk (and so
    ``openstack accelerator arq bind|unbind``) sends, the body
    ``{uuid: [ops]}`` for the ARQ of the path (a bare ``[ops]`` too)."""
    util.authorize(state, req, policies.ARQ % 'update')
    util.uuid_param('uuid', uuid)
    body = util.json_body(req)
    if isinstance(body, list):
        body = {uuid: body}
    if not isinstance(body, dict) or set(body) != {uuid}:
        raise util.bad_request(
            'PATCH /v2/accelerator_requests/%s takes {"%s": [ops]} or '
            '[ops], for that accelerator request only' % (uuid, uuid)
        )
    patch = util.validate(body, schema.patch_schema(util.version(req)))
    _apply(state, req, patch)
    util.send(resp, None, 202)


def _apply(state, req, patch):
    binds, unbinds = _bindings(patch)
    if any('project_id' in fields for fields in binds.values()):
        if util.version(req) < (2, 1):
            raise errors.HTTPError(
                406,
                'Setting /project_id of an accelerator request needs '
                'microversion 2.1 or later',
            )
        if not util.ctx(req).is_admin:
            raise util.forbidden(
                'Only an administrator may set the project_id of an '
                'accelerator request'
            )
    try:
        if binds:
            arq_obj.start_binds(state.adb, binds)
        releases = arq_obj.unbind(state.adb, unbinds) if unbinds else []
    except arq_obj.NotFound as exc:
        raise util.not_found(
            'Accelerator request %s could not be found' % exc
        ) from exc
    except arq_obj.UnknownProvider as exc:
        raise util.not_found(
            'No deployable has resource provider %s (device_rp_uuid)' % exc
        ) from exc
    except arq_obj.InstanceHasArqs as exc:
        raise util.bad_request(
            'Instance %s already has accelerator requests on that host; '
            'cannot bind more' % exc
        ) from exc
    except states.InvalidTransition as exc:
        raise util.conflict(str(exc)) from exc
    state.release(util.ctx(req), releases)
    if binds:
        state.wake_binder()


def delete(state, req, resp):
    params = util.query(req, {'arqs', 'instance'})
    if ('arqs' in params) == ('instance' in params):
        raise util.bad_request(
            'Deleting accelerator requests needs exactly '
            "one of the query parameters 'arqs' "
            "(comma-separated uuids) or 'instance'"
        )
    if 'instance' in params:
        util.authorize(state, req, policies.ARQ % 'delete_by_instance')
        instance = util.uuid_param('instance', params['instance'])
        _deleted, releases = arq_obj.delete(state.adb, instance_uuid=instance)
        state.release(util.ctx(req), releases)
    else:
        _delete_uuids(
            state, req, [u.strip() for u in params['arqs'].split(',')]
        )
    util.send(resp, None, 204)


def delete_one(state, req, resp, uuid):
    """``DELETE /v2/accelerator_requests/{uuid}``: what openstacksdk (and
    so python-cyborgclient's ``arq delete``) sends; as ``?arqs={uuid}``."""
    _delete_uuids(state, req, [uuid])
    util.send(resp, None, 204)


def _delete_uuids(state, req, uuids):
    """Delete these ARQs, all or none: an unknown (or another project's)
    one is a 404, a bound one without ``delete_bound`` (the service role)
    a 403, checked in the deleting transaction."""
    util.authorize(state, req, policies.ARQ % 'delete')
    for uuid in uuids:
        util.uuid_param('arqs', uuid)
    uuids = list(dict.fromkeys(uuids))
    all_projects = util.may(state, req, policies.ARQ % 'all_projects')
    may_delete_bound = util.may(state, req, policies.ARQ % 'delete_bound')
    project = util.ctx(req).project_id

    def check(arqs):
        found = {a['uuid']: a for a in arqs}
        for uuid in uuids:
            arq = found.get(uuid)
            if arq is None or not (
                all_projects or arq['project_id'] == project
            ):
                raise util.not_found(
                    'Accelerator request %s could not be found' % uuid
                )
        if may_delete_bound:
            return
        for uuid in uuids:
            if found[uuid]['instance_uuid']:
                raise util.forbidden(
                    'Accelerator request %s is bound to instance %s: only '
                    'the service role may delete it (deleting the server '
                    'frees its device)' % (uuid, found[uuid]['instance_uuid'])
                )

    _deleted, releases = arq_obj.delete(state.adb, uuids=uuids, check=check)
    state.release(util.ctx(req), releases)
