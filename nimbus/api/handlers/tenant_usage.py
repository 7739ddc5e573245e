"""/os-simple-tenant-usage: server hours and resource-hours of projects
over a period (``start``, ``end``; both default to now), in Nova's shape.
From 2.40 the servers are paged (``limit``, ``marker``) with
``tenant_usages_links``."""

import datetime

from nimbus.api import policies
from nimbus.api import util
from nimbus.api.objects import tenant_usage as usage_obj
from nimbus.api.schemas import common

FORMATS = ('%Y-%m-%dT%H:%M:%S', '%Y-%m-%dT%H:%M:%S.%f', '%Y-%m-%d %H:%M:%S.%f')
QUERY = {
    'type': 'object',
    'properties': dict(
        common.PAGING,
        **{
            'start': {'type': 'string'},
            'end': {'type': 'string'},
            'detailed': {'type': 'string'},
        },
    ),
}


def _parse(value, now):
    if value is None:
        return now
    for fmt in FORMATS:
        try:
            return datetime.datetime.strptime(value, fmt)
        except ValueError:
            continue
    raise util.bad_request(
        'Invalid input for query parameters: datetime %s '
        'is in an invalid format; use '
        'YYYY-MM-DDTHH:MM:SS[.ffffff].' % value
    )


def _period(params):
    now = util.utcnow()
    start = _parse(params.get('start'), now)
    stop = _parse(params.get('end'), now)
    if not start < stop and not (
        params.get('start') is None and params.get('end') is None
    ):
        raise util.bad_request(
            'Invalid start time. The start time cannot '
            'occur after the end time.'
        )
    return start, stop


def _server_usage(row, start, stop, now):
    flavor = row['flavor']
    hours = usage_obj.hours_in(
        row['launched_at'], row['terminated_at'], start, stop
    )
    ended = row['terminated_at']
    started = row['launched_at'] or row['created_at']
    uptime = int(((ended or now) - started).total_seconds())
    return {
        'instance_id': row['uuid'],
        'name': row['name'],
        'hours': hours,
        'memory_mb': int(flavor.get('memory_mb') or 0),
        'local_gb': int(flavor.get('root_gb') or 0)
        + int(flavor.get('ephemeral_gb') or 0),
        'vcpus': int(flavor.get('vcpus') or 0),
        'tenant_id': row['project_id'],
        'flavor': flavor.get('name') or '',
        'started_at': started.isoformat(),
        'ended_at': ended.isoformat() if ended else None,
        'state': 'terminated' if ended else row['vm_state'],
        'uptime': max(uptime, 0),
    }


def _usages(req, params, project_id):
    start, stop = _period(params)
    now = util.utcnow()
    rows = usage_obj.instances_in(
        util.deps(req).cells, start, stop, project_id
    )
    more = False
    if util.version(req) >= (2, 40):
        rows, more = util.page(
            rows, lambda r: r['uuid'], params, util.limit_of(req, params)
        )
    by_project = {}
    for row in rows:
        usage = _server_usage(row, start, stop, now)
        total = by_project.setdefault(
            row['project_id'],
            {
                'tenant_id': row['project_id'],
                'start': start.isoformat(),
                'stop': stop.isoformat(),
                'total_hours': 0.0,
                'total_local_gb_usage': 0.0,
                'total_memory_mb_usage': 0.0,
                'total_vcpus_usage': 0.0,
                'server_usages': [],
            },
        )
        total['total_hours'] += usage['hours']
        total['total_local_gb_usage'] += usage['local_gb'] * usage['hours']
        total['total_memory_mb_usage'] += usage['memory_mb'] * usage['hours']
        total['total_vcpus_usage'] += usage['vcpus'] * usage['hours']
        total['server_usages'].append(usage)
    last = rows[-1]['uuid'] if more and rows else None
    return by_project, start, stop, last


def index(req, resp):
    util.authorize(req, policies.USAGE % 'list')
    params = util.query(req, QUERY)
    detailed = util.boolish(params.get('detailed', '0'), 'detailed')
    by_project, _start, _stop, last = _usages(req, params, None)
    usages = []
    for _project, usage in sorted(by_project.items()):
        if not detailed:
            usage.pop('server_usages')
        usages.append(usage)
    body = {'tenant_usages': usages}
    if last is not None:
        body['tenant_usages_links'] = util.next_link(
            req, 'os-simple-tenant-usage', last, params
        )
    resp.media = body


def show(req, resp, project_id):
    if not project_id:
        # GET /os-simple-tenant-usage/ names no project: Nova's router
        # matches nothing there.
        raise util.not_found('Resource', 'os-simple-tenant-usage/')
    util.authorize(req, policies.USAGE % 'show', {'project_id': project_id})
    params = util.query(req, QUERY)
    by_project, start, stop, last = _usages(req, params, project_id)
    usage = by_project.get(project_id) or {}
    # A project with no servers in the period shows an empty object, as
    # Nova does.
    body = {'tenant_usage': usage}
    if last is not None:
        body['tenant_usage_links'] = util.next_link(
            req, 'os-simple-tenant-usage/%s' % project_id, last, params
        )
    resp.media = body
