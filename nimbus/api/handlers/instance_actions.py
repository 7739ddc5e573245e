"""GET /servers/{id}/os-instance-actions[/{request_id}] and
GET /servers/{id}/diagnostics.

The actions are read from the server's cell (``instance_actions``, written
when the API starts an action and as the compute reports its events).
Events show to everyone who can see the action from 2.51 (below it only
with ``os-instance-actions:events``); their tracebacks only with that
policy; ``hostId`` from 2.62, the event's ``host`` with
``os-instance-actions:events:details`` (2.62) and its ``details`` from
2.84 with the same policy; ``updated_at`` and ``changes-since`` from 2.58,
``changes-before`` from 2.66.
"""

import hashlib


from nimbus.api import policies_server_actions as policies
from nimbus.api import util
from nimbus.api.handlers import action_steps
from nimbus.api.handlers import servers
from nimbus.api.objects import server_actions as action_obj

_ACTION_KEYS = (
    'action',
    'instance_uuid',
    'message',
    'project_id',
    'request_id',
    'start_time',
    'user_id',
)


def _action_view(req, action):
    body = {key: action[key] for key in _ACTION_KEYS}
    body['start_time'] = util.isotime(action['start_time'])
    if util.version(req) >= (2, 58):
        body['updated_at'] = util.isotime(action['updated_at'])
    return body


def _placed(req, server_id, rule):
    record = servers.get_authorized(req, server_id, rule)
    if record['cell'] is None:
        return record, None
    return record, record['cell']


def index(req, resp, server_id):
    record, cell = _placed(req, server_id, policies.INSTANCE_ACTIONS % 'list')
    version = util.version(req)
    since = before = None
    if version >= (2, 58):
        since = util.query_time(req.params, 'changes-since')
    if version >= (2, 66):
        before = util.query_time(req.params, 'changes-before')
    if since and before and since > before:
        raise util.bad_request(
            'The value of changes-since must be less than or equal to '
            'changes-before.'
        )
    actions = []
    if cell is not None:
        actions = action_obj.list_actions(
            util.deps(req).cells, cell, record['uuid'], since, before
        )
    views = [_action_view(req, a) for a in actions]
    if version >= (2, 58):
        params = dict(req.params)
        limit = util.limit_of(req, params)
        marker = params.get('marker')
        if marker is not None:
            ids = [a['request_id'] for a in views]
            if marker not in ids:
                raise util.bad_request(
                    'Marker %s could not be found.' % marker
                )
            views = views[ids.index(marker) + 1 :]
        more = len(views) > limit
        views = views[:limit]
        body = {'instanceActions': views}
        if more and views:
            body['links'] = [
                {
                    'rel': 'next',
                    'href': '%s/servers/%s/os-instance-actions?limit=%d'
                    '&marker=%s'
                    % (
                        util.base_url(req),
                        record['uuid'],
                        limit,
                        views[-1]['request_id'],
                    ),
                }
            ]
        resp.media = body
        return
    resp.media = {'instanceActions': views}


def _host_id(project_id, host):
    if not host:
        return ''
    return hashlib.sha224((str(project_id) + host).encode()).hexdigest()


def show(req, resp, server_id, request_id):
    record, cell = _placed(req, server_id, policies.INSTANCE_ACTIONS % 'show')
    deps = util.deps(req)
    action = None
    if cell is not None:
        action = action_obj.get_action(
            deps.cells, cell, record['uuid'], request_id
        )
    if action is None:
        raise util.not_found('Action', request_id)
    version = util.version(req)
    target = {'project_id': record['project_id']}
    with_traceback = util.can(
        req, policies.INSTANCE_ACTIONS % 'events', target
    )
    with_details = util.can(
        req, policies.INSTANCE_ACTIONS % 'events:details', target
    )
    body = _action_view(req, action)
    if with_traceback or version >= (2, 51):
        events = []
        for event in action['events']:
            shown = {
                'event': event['event'],
                'start_time': util.isotime(event['start_time']),
                'finish_time': util.isotime(event['finish_time']),
                'result': event['result'],
            }
            if with_traceback:
                shown['traceback'] = event['traceback']
            if version >= (2, 62):
                shown['hostId'] = _host_id(record['project_id'], event['host'])
                if with_details:
                    shown['host'] = event['host']
            if version >= (2, 84) and with_details:
                shown['details'] = event['details']
            events.append(shown)
        body['events'] = events
    resp.media = {'instanceAction': body}


def _legacy_diagnostics(diag):
    """Below 2.48 a driver's own flat keys (the fake driver's, in
    Nova's libvirt-like naming)."""
    flat = {}
    for cpu in diag.get('cpu_details') or []:
        flat['cpu%d_time' % cpu['id']] = cpu['time']
    memory = diag.get('memory_details') or {}
    flat['memory'] = memory.get('maximum', 0)
    for index, disk in enumerate(diag.get('disk_details') or []):
        for key in ('read_bytes', 'read_requests', 'write_bytes'):
            flat['vd%s_%s' % ('abcdefgh'[index % 8], key)] = disk[key]
    return flat


def diagnostics(req, resp, server_id):
    record = servers.get_authorized(req, server_id, policies.DIAGNOSTICS)
    action_steps.check_placed(record, 'diagnostics')
    diag = action_steps.ask_compute(
        record,
        'diagnostics',
        lambda: (
            util.deps(req)
            .compute_api(record['cell'])
            .get_diagnostics(util.ctx(req), record['host'], record['uuid'])
        ),
    )
    if util.version(req) < (2, 48):
        diag = _legacy_diagnostics(diag)
    resp.media = diag
