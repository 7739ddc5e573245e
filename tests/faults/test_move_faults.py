"""kill -9 in the middle of a move (issue 24, section 3), on RabbitMQ and
MariaDB.

One cloud of daemons (API, placement API, super conductor, scheduler, a
cell conductor and two compute processes, ``host-1`` and ``host-2``, each
spawning a guest in :data:`SPAWN_S` seconds so a move has a middle to
strike) serves every row. A row is one (move kind x killed process):

- the move kinds (:data:`MOVES`): a resize, a cold migrate, an unshelve
  of an offloaded server to the other host (2.91). A new kind (a live
  migration) is one more :class:`Move` in that list;
- the killed processes (:data:`KILLED`): the source compute (the host the
  server was on), the destination compute, the cell conductor, the super
  conductor. A compute or the cell conductor is killed while the
  destination spawns (the server's task is the move's spawn step); the
  super conductor right after the API's 202 for a resize or migrate
  (its scheduling) and during the destination's spawn for an unshelve
  (it waits on that call). Each is started again 3 s later.

Then the row waits until the server settles and asserts: it is ACTIVE
(or SHUTOFF) on one host, or VERIFY_RESIZE, or ERROR with a fault saying
why (an unshelve undone: SHELVED_OFFLOADED on no host, holding nothing); its migration record is in a final state (``finished`` for
VERIFY_RESIZE); placement holds exactly one allocation set for it (on its
host; the migration's on the source too only in VERIFY_RESIZE) and nothing
else in the cloud; ``nimbus-manage audit`` reports nothing. A server left
in VERIFY_RESIZE is then confirmed (or reverted, per kind), and the same
holds after.

``make test-faults`` runs every row; ``make test`` (the quick subset) one:
a resize with the destination compute killed.
"""

import dataclasses
import os
import time

import pytest
import requests

from nimbus.allinone.client import ComputeClient
from nimbus.testing import daemons
from nimbus.testing import private_mariadb
from nimbus.testing import private_rabbit
from tests.faults import conftest

pytestmark = pytest.mark.integration

SPAWN_S = 4
DOWN_S = 3.0
SETTLE_S = 150
PLACEMENT = {
    'X-Auth-Token': 'admin',
    'OpenStack-API-Version': 'placement 1.39',
}
# A migration in one of these is over (Nova's final statuses, and
# ``finished`` only while its server waits in VERIFY_RESIZE).
FINAL = ('confirmed', 'reverted', 'error', 'failed', 'completed', 'done')
SETTLED = ('ACTIVE', 'SHUTOFF', 'VERIFY_RESIZE', 'ERROR')


@dataclasses.dataclass(frozen=True)
class Move:
    """One move kind of the table. ``start(api, server, ctx)`` sends it
    (``ctx``: the flavors and hosts); ``spawn_task`` is the task the
    server shows while its destination spawns; ``has_migration``: the
    move makes a migration record; ``after_verify``: what ends a
    VERIFY_RESIZE the row leaves (``confirmResize``/``revertResize``)."""

    name: str
    start: object
    spawn_task: str
    has_migration: bool = True
    after_verify: str = 'confirmResize'
    # Put the server where the move starts from (shelve it...).
    prepare: object = None
    # A status the server may end in besides :data:`SETTLED`: where it
    # started, on no host and holding nothing (an unshelve undone).
    back: str = None
    # The migration status that marks the middle of the move, when the
    # task alone does not (a live migration is `migrating` from the
    # API's answer on; its copy runs while the migration is `running`).
    middle: str = None


def _resize(api, uuid, ctx):
    api.post(
        '/servers/%s/action' % uuid, {'resize': {'flavorRef': ctx['big']}}
    )


def _migrate(api, uuid, ctx):
    api.post('/servers/%s/action' % uuid, {'migrate': None})


def _shelve(api, uuid, ctx):
    api.post('/servers/%s/action' % uuid, {'shelve': None})
    _wait(api, uuid, lambda s: s['status'] == 'SHELVED_OFFLOADED', 'offloaded')


def _unshelve(api, uuid, ctx):
    api.post(
        '/servers/%s/action' % uuid,
        {'unshelve': {'host': ctx['other']}},
        microversion='2.91',
    )


def _live_migrate(api, uuid, ctx):
    api.post(
        '/servers/%s/action' % uuid,
        {'os-migrateLive': {'host': None, 'block_migration': 'auto'}},
        microversion='2.68',
    )


MOVES = [
    Move('resize', _resize, 'resize_finish', after_verify='revertResize'),
    Move('live migrate', _live_migrate, 'migrating', middle='running'),
    Move('cold migrate', _migrate, 'resize_finish'),
    Move(
        'unshelve',
        _unshelve,
        'spawning',
        has_migration=False,
        prepare=_shelve,
        back='SHELVED_OFFLOADED',
    ),
]

# killed process -> (daemon name of it given the row's hosts, when).
KILLED = {
    'source compute': (lambda c: c['source'], 'spawn'),
    'destination compute': (lambda c: c['other'], 'spawn'),
    'cell conductor': (lambda c: 'cell1-conductor', 'spawn'),
    'super conductor': (lambda c: 'conductor', 'accepted'),
}
QUICK = [('resize', 'destination compute')]
# What each recovery logs when it acts (the row's evidence of which one
# settled the move): log text -> its name in the table.
RECOVERED = {
    'cut short by a restart; finishing it again': 'destination finished again',
    'undoing the move': 'source undid the move',
    'its confirm was cut short': 'confirm done again',
    'its revert was cut short': 'revert done again',
    'Unshelve interrupted': 'unshelve undone',
    'was unshelved on': 'unshelve found spawned',
    'recovery: the move of': 'super conductor undid the stuck move',
}
ROWS = [(m.name, k) for m in MOVES for k in KILLED]


class Api(ComputeClient):
    def post(self, path, body, microversion=None):
        headers = {}
        if microversion:
            headers['OpenStack-API-Version'] = 'compute ' + microversion
        return self._call('POST', self.url + path, json=body, headers=headers)


def _wait(api, uuid, predicate, what, timeout=120):
    deadline = time.monotonic() + timeout
    server = None
    while time.monotonic() < deadline:
        try:
            server = api.server(uuid)
        except Exception:
            server = None  # the API or a conductor is coming back
        if server is not None and predicate(server):
            return server
        time.sleep(0.3)
    raise AssertionError('server %s never %s: %s' % (uuid, what, server))


@pytest.fixture(scope='module')
def cloud(tmp_path_factory):
    cleanups = []
    try:
        rabbit = private_rabbit.RabbitNode().__enter__()
        cleanups.append(rabbit.stop)
        mariadb = private_mariadb.MariaDBServer().__enter__()
        cleanups.append(mariadb.stop)
        buses = [rabbit.vhost(), rabbit.vhost()]
        databases = {}
        for name in ('api', 'cell0', 'cell1', 'placement'):
            url, cleanup = mariadb.database()
            cleanups.append(cleanup)
            databases[name] = url
        slow = {
            'fake_driver': {
                'spawn_seconds': SPAWN_S,
                'live_migration_seconds': SPAWN_S,
            }
        }
        cloud = daemons.DaemonCloud(
            str(tmp_path_factory.mktemp('move-faults')),
            buses[0],
            buses[1],
            databases,
            hosts=2,
            compute_options={'host-1': slow, 'host-2': slow},
            common_options={
                'DEFAULT': {
                    'report_interval': 2,
                    'service_down_time': 10,
                    'shelved_offload_time': 0,
                },
                'rpc': {'rpc_response_timeout': 20},
                'conductor': {
                    'recovery_interval': 5,
                    'build_request_timeout': 60,
                    'audit_grace': 5,
                },
            },
        )
        cleanups.append(cloud.stop)
        cloud.prepare()
        cloud.start()
        api = Api(cloud.api_url + '/v2.1', microversion='2.80')
        daemons.wait_for(
            lambda: (
                sum(
                    1
                    for h in api.get('/os-hypervisors/detail')['hypervisors']
                    if h.get('state') == 'up'
                )
                == 2
            ),
            120,
            'the 2 hosts',
            list(cloud.daemons.values()),
        )
        cloud.manage('cell', 'discover-hosts')
        ctx = {
            'small': api.create_flavor('mv.small', 1, 256, 1)['id'],
            'big': api.create_flavor('mv.big', 2, 512, 1)['id'],
            'image': api.create_image('mv-image')['id'],
        }
        yield cloud, api, ctx
    finally:
        for cleanup in reversed(cleanups):
            cleanup()


def _placement(cloud, path):
    response = requests.get(
        cloud.placement_url + path, headers=PLACEMENT, timeout=30
    )
    response.raise_for_status()
    return response.json()


def _held(cloud, consumer):
    """{provider name: resources} the consumer holds."""
    allocations = _placement(cloud, '/allocations/%s' % consumer)[
        'allocations'
    ]
    names = {}
    for rp in allocations:
        names[rp] = _placement(cloud, '/resource_providers/%s' % rp)['name']
    return {names[rp]: a['resources'] for rp, a in allocations.items()}


def _consumers(cloud):
    found = set()
    providers = _placement(cloud, '/resource_providers')['resource_providers']
    for provider in providers:
        found.update(
            _placement(
                cloud, '/resource_providers/%s/allocations' % provider['uuid']
            )['allocations']
        )
    return found


def _migration(api, uuid):
    """The server's newest migration record, or None."""
    found = api.get('/os-migrations', params={'instance_uuid': uuid})
    found = found['migrations']
    return max(found, key=lambda m: m['id']) if found else None


def _settled(api, uuid, move):
    def done(server):
        if server['status'] not in SETTLED + (move.back,):
            return False
        if server.get('OS-EXT-STS:task_state'):
            return False
        if not move.has_migration:
            return True
        migration = _migration(api, uuid)
        if migration is None:
            return True
        if server['status'] == 'VERIFY_RESIZE':
            return migration['status'] == 'finished'
        return migration['status'] in FINAL

    return done


def _outcome(cloud, api, uuid, move):
    """Assert the three outcomes; the server's status."""
    server = _wait(api, uuid, _settled(api, uuid, move), 'settled', SETTLE_S)
    status = server['status']
    if status == 'ERROR':
        assert (server.get('fault') or {}).get('message'), server
    host = server.get('OS-EXT-SRV-ATTR:host')
    migration = _migration(api, uuid) if move.has_migration else None
    # Placement: one allocation set for the server, on its host.
    held = _held(cloud, uuid)
    expected = set()
    if status == move.back:
        assert not host and not held, (status, host, held)
    elif status != 'ERROR' or held:
        assert list(held) == [host], (status, host, held)
        expected.add(uuid)
    if status == 'VERIFY_RESIZE':
        assert migration['status'] == 'finished', migration
        source = _held(cloud, migration['uuid'])
        assert list(source) == [migration['source_compute']], source
        expected.add(migration['uuid'])
    elif migration is not None:
        assert migration['status'] in FINAL, migration
        assert _held(cloud, migration['uuid']) == {}, migration
    # Nothing else anywhere (the rows run one after the other).
    assert _consumers(cloud) == expected, (expected, server, migration)
    cloud.manage('audit')  # exits 1 (raises) on any disagreement
    return server, migration


def _log_sizes(cloud):
    sizes = {}
    for name, daemon in cloud.daemons.items():
        try:
            sizes[name] = os.path.getsize(daemon.log_file)
        except OSError:
            sizes[name] = 0
    return sizes


def _recovered(cloud, sizes):
    """The recoveries that acted since ``sizes`` (:func:`_log_sizes`)."""
    found = set()
    for name, daemon in cloud.daemons.items():
        try:
            with open(daemon.log_file, errors='replace') as f:
                f.seek(sizes.get(name, 0))
                text = f.read()
        except OSError:
            continue
        found.update(what for mark, what in RECOVERED.items() if mark in text)
    return ', '.join(sorted(found)) or 'none needed'


def _strike(cloud, name):
    daemon = cloud.daemons[name]
    daemon.kill9()
    time.sleep(DOWN_S)
    daemon.start()


def _row(cloud, move_name, killed):
    cloud_, api, ctx = cloud
    move = next(m for m in MOVES if m.name == move_name)
    began = time.monotonic()
    name = '%s-%s' % (move.name, killed)
    body = api.create_server(
        name.replace(' ', '-'), ctx['small'], ctx['image']
    )
    uuid = body['server']['id']
    try:
        line = _move_and_strike(cloud_, api, ctx, uuid, move, killed)
        conftest.MOVE_ROWS.append(
            '%s | %.1f' % (line, time.monotonic() - began)
        )
    finally:
        # Each row leaves nothing behind for the next, even failing.
        api.delete('/servers/%s' % uuid)
        daemons.wait_for(
            lambda: uuid not in {s['id'] for s in api.servers()},
            60,
            'the delete of ' + uuid,
            list(cloud_.daemons.values()),
        )


def _move_and_strike(cloud, api, ctx, uuid, move, killed):
    """The row's move, struck; its line of the table."""
    server = _wait(api, uuid, lambda s: s['status'] == 'ACTIVE', 'ACTIVE')
    source = server['OS-EXT-SRV-ATTR:host']
    hosts = ('host-1', 'host-2')
    ctx = dict(ctx, source=source, other=hosts[source == hosts[0]])
    if move.prepare:
        move.prepare(api, uuid, ctx)
    daemon_of, when = KILLED[killed]
    move.start(api, uuid, ctx)
    if move.middle and when == 'spawn':
        _wait(
            api,
            uuid,
            lambda s: (
                (_migration(api, uuid) or {}).get('status') == move.middle
            ),
            'migration ' + move.middle,
        )
        seen = api.server(uuid)
    elif when == 'spawn' or move.spawn_task == 'spawning':
        seen = _wait(
            api,
            uuid,
            lambda s: s.get('OS-EXT-STS:task_state') == move.spawn_task,
            'in ' + move.spawn_task,
        )
    else:
        seen = api.server(uuid)
    struck = time.monotonic()
    sizes = _log_sizes(cloud)
    _strike(cloud, daemon_of(ctx))
    server, migration = _outcome(cloud, api, uuid, move)
    line = '%s | %s | %s | %s on %s | %s | %.1f | %s' % (
        move.name,
        killed,
        seen.get('OS-EXT-STS:task_state'),
        server['status'],
        server.get('OS-EXT-SRV-ATTR:host'),
        migration['status'] if migration else '-',
        time.monotonic() - struck,
        _recovered(cloud, sizes),
    )
    after = '-'
    if server['status'] == 'VERIFY_RESIZE':
        api.post('/servers/%s/action' % uuid, {move.after_verify: None})
        server, migration = _outcome(cloud, api, uuid, move)
        assert server['status'] == 'ACTIVE', server
        after = '%s: %s on %s, %s' % (
            move.after_verify,
            server['status'],
            server.get('OS-EXT-SRV-ATTR:host'),
            migration['status'],
        )
    return '%s | %s' % (line, after)


@pytest.mark.parametrize(
    'move,killed', QUICK, ids=['%s, kill -9 %s' % q for q in QUICK]
)
def test_move_quick(cloud, move, killed):
    _row(cloud, move, killed)


@pytest.mark.faults_full
@pytest.mark.parametrize(
    'move,killed', ROWS, ids=['full %s, kill -9 %s' % r for r in ROWS]
)
def test_move_full(cloud, move, killed):
    _row(cloud, move, killed)
