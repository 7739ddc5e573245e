"""POST /os-server-external-events: deliver events to the servers' computes.

Each event is looked up: no such server → 404; a server without a host
(still a build request, or never placed) → 422; otherwise it is cast to the
server's compute on its cell's bus (and, while a resize, cold or live
migration is under way, to its source and destination both, as Nova;
for a move to another cell, each on its own cell's bus)
and answered 200. The response is 200 when every event was accepted,
207 when some were, 404 when none was.
"""

import functools

from nimbus.api import policies
from nimbus.api import util
from nimbus.api.objects import server_resize as resize_obj
from nimbus.api.objects import servers as server_obj
from nimbus.api.schemas import common
from nimbus.common.objects import InstanceEvent
from nimbus.common.wsgi import json_body

NAMES = {
    'network-changed': (2, 1),
    'network-vif-plugged': (2, 1),
    'network-vif-unplugged': (2, 1),
    'network-vif-deleted': (2, 1),
    'volume-extended': (2, 51),
    'power-update': (2, 76),
    'accelerator-request-bound': (2, 82),
    'volume-reimaged': (2, 93),
}


@functools.lru_cache(maxsize=256)
def create_schema(version):
    # one object per microversion: the validation cache keys on it
    names = sorted(n for n, v in NAMES.items() if version >= v)
    return {
        'type': 'object',
        'properties': {
            'events': {
                'type': 'array',
                'minItems': 1,
                'items': {
                    'type': 'object',
                    'properties': {
                        'server_uuid': common.UUID,
                        'name': {'type': 'string', 'enum': names},
                        'status': {
                            'type': 'string',
                            'enum': ['failed', 'completed', 'in-progress'],
                        },
                        'tag': {'type': 'string', 'maxLength': 255},
                    },
                    'required': ['server_uuid', 'name'],
                    'additionalProperties': False,
                },
            }
        },
        'required': ['events'],
        'additionalProperties': False,
    }


def create(req, resp):
    util.authorize(req, policies.EVENTS)
    body = json_body(req, create_schema(util.version(req)))
    deps = util.deps(req)
    ctx = util.ctx(req)
    results, to_send = [], {}
    for event in body['events']:
        result = dict(event)
        result.setdefault('status', 'completed')
        try:
            record = server_obj.get(
                deps.api_db, deps.cells, event['server_uuid']
            )
        except server_obj.ServerNotFound:
            result.update(code=404, status='failed')
            results.append(result)
            continue
        except server_obj.CellUnreachable:
            # Nova answers 422 for an event it cannot deliver.
            result.update(code=422, status='failed')
            results.append(result)
            continue
        if record['cell'] is None or not record.get('host'):
            result.update(code=422, status='failed')
            results.append(result)
            continue
        result['code'] = 200
        results.append(result)
        targets = {(record['cell'].uuid, record['host']): record['cell']}
        for cell, host in resize_obj.move_hosts(deps.cells, record):
            targets.setdefault((cell.uuid, host), cell)
        for (cell_uuid, host), cell in sorted(
            targets.items(), key=lambda t: t[0]
        ):
            key = (cell_uuid, host, event['server_uuid'])
            entry = to_send.setdefault(key, (cell, []))
            entry[1].append(
                InstanceEvent(
                    name=event['name'],
                    tag=event.get('tag'),
                    status=result['status'],
                )
            )
    for (_cell_uuid, host, uuid), (cell, events) in to_send.items():
        deps.compute_api(cell).external_instance_event(ctx, host, uuid, events)
    if not to_send:
        raise util.not_found('Instances for', 'any event')
    resp.status = 200 if all(r['code'] == 200 for r in results) else 207
    resp.media = {'events': results}
