"""``POST /os-scheduler/move-dry-run`` (admin only; a Nimbus extension):
where would the scheduler move a server, and why, claiming nothing.

The server's request spec stored at create becomes the move's spec
exactly as the super conductor builds it for a real move
(:meth:`nimbus.common.objects.RequestSpec.for_move`, which
:func:`nimbus.conductor.move_claims.move_spec` calls: the source in
``ignore_hosts``, a chosen host as ``requested_destination``, the server
group, zone, image and hints as they were), and goes through the
scheduler's dry run (:meth:`nimbus.scheduler.driver.Scheduler.dry_run`):
the filters and weighers run, nothing is claimed in placement. The
answer is the dry run's (``ranked``, ``rejected`` with the filter that
said no, ``filters``, ``message``) plus the move's ``server_id``,
``source``, ``move``, the chosen ``host`` and its ``alternates`` (None
and [] when no host fits).

Nothing is reserved: a server moved later goes where the scheduler
answers then, which is this host when nothing changed in between. Each
server is answered as if it moved alone (``nimbus host drain --dry-run``
asks once per server).
"""

from nimbus.api import policies_scheduler as policies
from nimbus.api import util
from nimbus.api.handlers import servers as server_handlers
from nimbus.api.schemas import common
from nimbus.common.objects import RequestSpec
from nimbus.common.wsgi import errors
from nimbus.common.wsgi import json_body
from nimbus.db import request_specs

# What the answer calls the move; each builds the same spec (the source
# ignored, the host requested), as the conductor's migrate, live migrate
# and evacuate do. A cold or live migration stays in the server's cell.
MOVES = ('migrate', 'live-migrate', 'evacuate')
_SAME_CELL = ('migrate', 'live-migrate')

MOVE_DRY_RUN = {
    'type': 'object',
    'properties': {
        'server_id': common.UUID,
        'move': {'type': 'string', 'enum': list(MOVES)},
        'host': {'type': 'string', 'minLength': 1, 'maxLength': 255},
    },
    'required': ['server_id'],
    'additionalProperties': False,
}


def move_dry_run(req, resp):
    util.authorize(req, policies.MOVE_DRY_RUN)
    body = json_body(req, MOVE_DRY_RUN)
    deps = util.deps(req)
    if deps.scheduler_api is None:
        raise errors.HTTPError(503, 'No scheduler client is configured.')
    record = server_handlers.get_authorized(
        req, body['server_id'], policies.MOVE_DRY_RUN
    )
    source = record.get('host')
    if record['cell'] is None or not source:
        raise util.conflict(
            'Server %s has no host: there is nothing to move.' % record['uuid']
        )
    host = body.get('host')
    if host == source:
        raise util.bad_request(
            'The target host %s is the host the server is on.' % host
        )
    with deps.api_db.session() as session:
        stored = request_specs.get(session, record['uuid'])
    if not stored:
        raise util.conflict(
            'The request spec of server %s is gone: it cannot be moved '
            'through the scheduler.' % record['uuid']
        )
    spec = RequestSpec.from_primitive(stored).for_move(
        record['uuid'],
        ignore_hosts=(source,),
        destination={'host': host} if host else None,
    )
    move = body.get('move', 'migrate')
    result = deps.scheduler_api.dry_run(util.ctx(req), spec)
    result.update(
        server_id=record['uuid'],
        source=source,
        move=move,
        host=None,
        alternates=[],
    )
    placements = result.get('placements') or []
    if placements and not result.get('message'):
        chosen = placements[0]
        cell = record['cell'].uuid
        if move in _SAME_CELL and chosen.get('cell_uuid') not in (None, cell):
            result['message'] = (
                "The best host, %s, is in another cell than the server's: "
                'the %s would fail (a cross-cell move is not supported).'
                % (chosen['host'], move)
            )
        else:
            result['host'] = chosen['host']
            result['alternates'] = list(chosen.get('alternates') or [])
    resp.media = {'move_dry_run': result}
