"""The compute API calls of ``nimbus host drain|evacuate``: the host's
compute service, its servers, what to do with each, the move of one
server to its end, and the dry run (``POST /os-scheduler/move-dry-run``).

Everything goes through nimbus-api with the wire of Nova's v2.1 API
(microversion 2.72 as the CLI's client sends it): os-services to disable
the host, ``os-migrateLive`` (``host`` null, ``block_migration``
``auto``), ``migrate`` then ``confirmResize``, ``evacuate``. A move is
followed by reading the server until its task is over.
"""

import dataclasses
import time

COMPUTE = 'nova-compute'
POLL = 0.5

# What a drain does with a server of each status (the others are skipped).
DRAIN_MOVES = {
    'ACTIVE': 'live-migrate',
    'PAUSED': 'live-migrate',
    'SHUTOFF': 'migrate',
}
# Nova evacuates active, stopped and error servers.
EVACUATE_MOVES = {
    'ACTIVE': 'evacuate',
    'SHUTOFF': 'evacuate',
    'ERROR': 'evacuate',
}

MOVED = 'moved'
FAILED = 'failed'
SKIPPED = 'skipped'
TIMED_OUT = 'timed out'
INTERRUPTED = 'under way'
NOT_STARTED = 'not started'


class HostError(Exception):
    """Why the command cannot go on (one line for the terminal)."""


@dataclasses.dataclass
class Item:
    """One server of the host and what happens to it."""

    uuid: str
    name: str
    status: str
    task: str | None
    move: str | None  # None: skipped
    reason: str = ''  # why skipped, or why it failed
    result: str = ''
    dest: str | None = None
    asked: bool = False  # the move's action was accepted by the API


def service(client, host):
    """The compute service of ``host`` (os-services' view), or
    HostError."""
    found = client.get(
        '/os-services', params={'host': host, 'binary': COMPUTE}
    )['services']
    if not found:
        raise HostError('no compute service on host %r' % host)
    return found[0]


def is_down(svc):
    return svc.get('forced_down') or svc.get('state') == 'down'


def disable(client, svc, reason='drain'):
    """Disable the service with ``reason`` (os-services 2.53 PUT)."""
    client._call(
        'PUT',
        client.url + '/os-services/%s' % svc['id'],
        json={'status': 'disabled', 'disabled_reason': reason},
    )


def servers_on(client, host):
    """Every server of every project on ``host``, oldest first."""
    found, marker = [], None
    while True:
        params = {
            'all_tenants': '1',
            'host': host,
            'sort_key': 'created_at',
            'sort_dir': 'asc',
            'limit': 500,
        }
        if marker:
            params['marker'] = marker
        page = client.get('/servers/detail', params=params)['servers']
        found += page
        if len(page) < 500:
            return found
        marker = page[-1]['id']


def plan(servers, moves, what):
    """An Item per server: its move by status, or skipped with why."""
    items = []
    for server in servers:
        status = server.get('status')
        task = server.get('OS-EXT-STS:task_state')
        item = Item(server['id'], server.get('name') or '', status, task, None)
        if task:
            item.reason = 'busy: task %s' % task
        elif status not in moves:
            item.reason = '%s: %s moves %s servers' % (
                status,
                what,
                ', '.join(sorted(moves)),
            )
        else:
            item.move = moves[status]
        if item.move is None:
            item.result = SKIPPED
        items.append(item)
    return items


def dry_run(client, item, target=None):
    """The scheduler's answer for moving ``item`` (nothing claimed)."""
    body = {'server_id': item.uuid, 'move': item.move}
    if target:
        body['host'] = target
    return client.post('/os-scheduler/move-dry-run', body)['move_dry_run']


def _show(client, uuid):
    return client.get('/servers/%s' % uuid)['server']


def _fault(server):
    return (server.get('fault') or {}).get('message') or ''


def why_failed(client, uuid):
    """Why the server's last action failed, from its instance action's
    events (the last line of the failed event's traceback, which an
    admin sees from 2.51; Nova shows the fault only of an ERROR
    server), or ''."""
    actions = client.get('/servers/%s/os-instance-actions' % uuid)
    for action in actions.get('instanceActions') or []:
        shown = client.get(
            '/servers/%s/os-instance-actions/%s' % (uuid, action['request_id'])
        )['instanceAction']
        for event in shown.get('events') or []:
            if event.get('result') != 'Error':
                continue
            lines = (event.get('traceback') or '').strip().splitlines()
            return '%s: %s' % (
                event.get('event'),
                lines[-1] if lines else 'Error',
            )
        return ''
    return ''


class Mover:
    """Moves one server and follows it to its end. ``stop`` (a
    threading.Event) ends the wait early: the move goes on in the cloud
    and the item says it is under way."""

    def __init__(self, client, host, stop, timeout, target=None):
        self.client = client
        self.host = host
        self.stop = stop
        self.timeout = timeout
        self.target = target

    def __call__(self, item):
        if self.stop.is_set():
            item.result = NOT_STARTED
            return item
        try:
            getattr(self, '_' + item.move.replace('-', '_'))(item)
        except RuntimeError as exc:  # the API said no: its answer
            item.result, item.reason = FAILED, str(exc).split(' -> ', 1)[-1]
        return item

    def _action(self, item, body):
        self.client.post('/servers/%s/action' % item.uuid, body)
        item.asked = True

    def _wait(self, item, done):
        """Read the server until ``done(server)``; False when stopped or
        timed out (the item says which)."""
        deadline = time.monotonic() + self.timeout
        while True:
            server = _show(self.client, item.uuid)
            if done(server):
                return server
            if self.stop.is_set():
                item.result = INTERRUPTED
                return None
            if time.monotonic() > deadline:
                item.result = TIMED_OUT
                item.reason = 'still %s (task %s) after %d s' % (
                    server.get('status'),
                    server.get('OS-EXT-STS:task_state'),
                    self.timeout,
                )
                return None
            self.stop.wait(POLL)

    def _settled(self, server):
        return not server.get('OS-EXT-STS:task_state')

    def _end(self, item, server):
        """The server's move is over: where is it?"""
        host = server.get('OS-EXT-SRV-ATTR:host')
        item.status = server.get('status')
        if host and host != self.host and item.status != 'ERROR':
            item.result, item.dest = MOVED, host
            return
        item.result = FAILED
        item.dest = host if host != self.host else None
        item.reason = (
            _fault(server)
            or why_failed(self.client, item.uuid)
            or 'still on %s, %s' % (host, item.status)
        )

    def _live_migrate(self, item):
        self._action(
            item, {'os-migrateLive': {'host': None, 'block_migration': 'auto'}}
        )
        server = self._wait(item, self._settled)
        if server is not None:
            self._end(item, server)

    def _migrate(self, item):
        self._action(item, {'migrate': None})
        server = self._wait(item, self._settled)
        if server is None:
            return
        if server.get('status') != 'VERIFY_RESIZE':
            return self._end(item, server)
        self._action(item, {'confirmResize': None})
        server = self._wait(
            item,
            lambda s: self._settled(s) and s.get('status') != 'VERIFY_RESIZE',
        )
        if server is not None:
            self._end(item, server)

    def _evacuate(self, item):
        body = {'host': self.target} if self.target else {}
        self._action(item, {'evacuate': body})
        server = self._wait(
            item,
            lambda s: (
                self._settled(s)
                and (
                    s.get('status') == 'ERROR'
                    or s.get('OS-EXT-SRV-ATTR:host') != self.host
                )
            ),
        )
        if server is not None:
            self._end(item, server)
