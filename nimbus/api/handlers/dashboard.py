"""The dashboard (admin; a Nimbus extension): a page and its JSON.

    GET /dashboard/                      the page (public: it holds no data)
    GET /dashboard/static/{asset}        its script and style sheet (public)
    GET /dashboard/api/hosts             usage per host and resource class
    GET /dashboard/api/failures          failed builds, faults, attempts
    GET /dashboard/api/capacity?flavor=F how many more of F fit, and where
    GET /dashboard/api/decisions         the decisions this process has seen
    GET /dashboard/api/events            the decision stream (text/event-stream)

Every ``/dashboard/api/`` call needs a token (``X-Auth-Token``) passing the
``nimbus:dashboard`` rule. The page sends it on ``fetch`` calls, the event
stream included: the page reads the stream with ``fetch`` rather than
``EventSource`` (which cannot send headers), so the token never appears in
a URL or an access log. See docs/dashboard.md.
"""

import importlib.resources
import time

import orjson

from nimbus.api import policies
from nimbus.api import util
from nimbus.api.dashboard import snapshot
from nimbus.api.dashboard import stream
from nimbus.api.handlers import capacity as capacity_handler
from nimbus.common.wsgi import errors

PREFIX = '/dashboard'
ASSETS = {
    'dashboard.js': 'application/javascript; charset=utf-8',
    'dashboard.css': 'text/css; charset=utf-8',
}
PAGE_PATHS = (PREFIX + '/',)
ASSET_PATHS = tuple('%s/static/%s' % (PREFIX, name) for name in ASSETS)

# The capacity route's query, but for what the board fixes (hosts) or
# does not offer (a server group, an image).
CAPACITY_QUERY = dict(
    capacity_handler.QUERY,
    properties={
        name: capacity_handler.QUERY['properties'][name]
        for name in ('flavor', 'availability_zone')
    },
)


def _static(name):
    return (
        importlib.resources.files('nimbus.api.dashboard')
        .joinpath('static', name)
        .read_bytes()
    )


def page(req, resp):
    resp.content_type = 'text/html; charset=utf-8'
    resp.set_header('Cache-Control', 'no-cache')
    resp.data = _static('index.html')


def asset(req, resp, name):
    kind = ASSETS.get(name)
    if kind is None:
        raise errors.HTTPError(404, 'No dashboard asset named %s.' % name)
    resp.content_type = kind
    resp.set_header('Cache-Control', 'no-cache')
    resp.data = _static(name)


def redirect(req, resp):
    resp.status = 301
    resp.set_header('Location', PREFIX + '/')


def _board(req):
    util.authorize(req, policies.DASHBOARD)
    return util.deps(req).dashboard


def hosts(req, resp):
    board = _board(req)
    deps = util.deps(req)
    body = board.cache.get(
        'hosts', lambda: snapshot.hosts(deps.api_db, deps.cells)
    )
    resp.media = body


def failures(req, resp):
    board = _board(req)
    deps = util.deps(req)
    resp.media = board.cache.get(
        'failures', lambda: snapshot.failed_builds(deps.api_db, deps.cells)
    )


def capacity(req, resp):
    _board(req)
    params = util.query(req, CAPACITY_QUERY)
    params['hosts'] = 'false'
    resp.media = {'capacity': capacity_handler.answer(req, params)}


def decisions(req, resp):
    board = _board(req)
    hub = board.hub
    resp.media = {
        'decisions': list(reversed(hub.latest())) if hub else [],
        'streaming': hub is not None,
    }


def _event(name, payload):
    return b'event: %s\ndata: %s\n\n' % (name.encode(), orjson.dumps(payload))


def _events(sub, keepalive, lifetime, clock=time.monotonic):
    """The stream's chunks: decisions as ``decision`` events, comments
    while idle; it ends after ``lifetime`` seconds or once the hub dropped
    the subscription (the page reconnects after ``retry`` ms)."""
    end = clock() + lifetime
    try:
        yield b'retry: 3000\n: connected\n\n'
        while not sub.dropped.is_set():
            left = end - clock()
            if left <= 0:
                yield _event('end', {'reason': 'lifetime'})
                return
            payload = sub.get(timeout=min(keepalive, left))
            if payload is not None:
                yield _event('decision', payload)
            elif not sub.dropped.is_set():
                yield b': keepalive\n\n'
        yield _event('end', {'reason': 'dropped'})
    finally:
        sub.close()


def events(req, resp):
    board = _board(req)
    if board.hub is None:
        raise errors.HTTPError(
            503,
            'The decision stream is not configured '
            'on this API (no notification transport).',
        )
    try:
        sub = board.hub.subscribe()
    except stream.TooManyStreams as exc:
        raise errors.HTTPError(503, str(exc)) from exc
    resp.content_type = 'text/event-stream'
    resp.set_header('Cache-Control', 'no-cache')
    resp.set_header('X-Accel-Buffering', 'no')
    resp.stream = _events(
        sub, board.conf.keepalive, board.conf.stream_lifetime
    )


ROUTES = [
    (PREFIX, {'GET': redirect}),
    (PREFIX + '/', {'GET': page}),
    (PREFIX + '/static/{name}', {'GET': asset}),
    (PREFIX + '/api/hosts', {'GET': hosts}),
    (PREFIX + '/api/failures', {'GET': failures}),
    (PREFIX + '/api/capacity', {'GET': capacity}),
    (PREFIX + '/api/decisions', {'GET': decisions}),
    (PREFIX + '/api/events', {'GET': events}),
]
PUBLIC_PATHS = (PREFIX,) + PAGE_PATHS + ASSET_PATHS
