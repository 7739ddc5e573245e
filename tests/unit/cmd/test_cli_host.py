"""``nimbus host drain|evacuate`` (nimbus.cmd.cli_host_run and
cli_host_moves) over a fake compute API: what each server's status
becomes, the wire of each move, and Ctrl-C, which stops the waiting and
not the moves (the cloud, end to end: tests/functional/test_host_ops.py).
"""

import argparse
import concurrent.futures
import threading

from nimbus.cmd import cli_host_moves as moves
from nimbus.cmd import cli_host_run


class FakeApi:
    """Servers on ``host-1``; an action is recorded, and a server read
    afterwards is where ``after(uuid, body)`` puts it."""

    url = 'http://api/v2.1'

    def __init__(self, servers, after=None, on_read=None):
        self.servers = {s['id']: dict(s) for s in servers}
        self.actions = []
        self.after = after
        self.on_read = on_read
        self.lock = threading.Lock()

    def get(self, path, params=None):
        if path == '/servers/detail':
            return {
                'servers': [
                    s
                    for s in self.servers.values()
                    if s['OS-EXT-SRV-ATTR:host'] == params['host']
                ]
            }
        uuid = path.split('/')[2]
        if path.endswith('/os-instance-actions'):
            return {'instanceActions': []}
        if self.on_read is not None:
            self.on_read(uuid)
        with self.lock:
            return {'server': dict(self.servers[uuid])}

    def post(self, path, body):
        uuid = path.split('/')[2]
        with self.lock:
            self.actions.append((uuid, body))
            if self.after is not None:
                self.servers[uuid].update(self.after(uuid, body))


def _server(uuid, status, task=None):
    return {
        'id': uuid,
        'name': 'vm-%s' % uuid,
        'status': status,
        'OS-EXT-STS:task_state': task,
        'OS-EXT-SRV-ATTR:host': 'host-1',
    }


def test_a_drain_moves_active_paused_and_stopped_servers_only():
    servers = [
        _server('a', 'ACTIVE'),
        _server('p', 'PAUSED'),
        _server('s', 'SHUTOFF'),
        _server('u', 'SUSPENDED'),
        _server('e', 'ERROR'),
        _server('b', 'ACTIVE', task='rebooting'),
    ]
    items = moves.plan(servers, moves.DRAIN_MOVES, 'a drain')
    assert [(i.uuid, i.move) for i in items] == [
        ('a', 'live-migrate'),
        ('p', 'live-migrate'),
        ('s', 'migrate'),
        ('u', None),
        ('e', None),
        ('b', None),
    ]
    skipped = {i.uuid: i.reason for i in items if i.move is None}
    assert skipped['u'].startswith('SUSPENDED: a drain moves ACTIVE')
    assert skipped['b'] == 'busy: task rebooting'
    evacuated = moves.plan(servers, moves.EVACUATE_MOVES, 'evacuate')
    assert [i.uuid for i in evacuated if i.move] == ['a', 's', 'e']


def _mover(api, timeout=60):
    return moves.Mover(api, 'host-1', threading.Event(), timeout)


def test_live_migrate_speaks_nova_s_wire():
    api = FakeApi(
        [_server('a', 'ACTIVE')],
        after=lambda uuid, body: {'OS-EXT-SRV-ATTR:host': 'host-2'},
    )
    (item,) = moves.plan(api.servers.values(), moves.DRAIN_MOVES, 'a drain')
    _mover(api)(item)
    assert api.actions == [
        ('a', {'os-migrateLive': {'host': None, 'block_migration': 'auto'}})
    ]
    assert (item.result, item.dest) == (moves.MOVED, 'host-2')


def test_a_stopped_server_is_migrated_then_confirmed():
    def after(uuid, body):
        if 'migrate' in body:
            return {'status': 'VERIFY_RESIZE', 'OS-EXT-SRV-ATTR:host': 'h3'}
        return {'status': 'SHUTOFF'}

    api = FakeApi([_server('s', 'SHUTOFF')], after=after)
    (item,) = moves.plan(api.servers.values(), moves.DRAIN_MOVES, 'a drain')
    _mover(api)(item)
    assert [body for _u, body in api.actions] == [
        {'migrate': None},
        {'confirmResize': None},
    ]
    assert (item.result, item.dest, item.status) == (
        moves.MOVED,
        'h3',
        'SHUTOFF',
    )


def test_an_api_refusal_is_a_failure_with_its_answer():
    class Refusing(FakeApi):
        def post(self, path, body):
            raise RuntimeError(
                'POST http://api/v2.1%s -> 400 {"badRequest": "no"}' % path
            )

    api = Refusing([_server('a', 'ACTIVE')])
    (item,) = moves.plan(api.servers.values(), moves.DRAIN_MOVES, 'a drain')
    _mover(api)(item)
    assert item.result == moves.FAILED
    assert item.reason == '400 {"badRequest": "no"}'
    assert not item.asked


def _args(**kw):
    values = dict(
        host='host-1',
        host_command='drain',
        parallel=1,
        timeout=600,
        format='json',
    )
    values.update(kw)
    return argparse.Namespace(**values)


def test_ctrl_c_leaves_the_moves_under_way_and_says_so(capsys, monkeypatch):
    """The first read of the first server presses Ctrl-C: the main
    thread's next wait raises KeyboardInterrupt, as Python raises it there
    on SIGINT. That move was asked for and goes on, the second was never
    started; the command exits 130 naming them. (Raised in the main
    thread itself: ``_thread.interrupt_main()`` from the mover's thread
    was lost now and then, and the test then waited for its timeout.)"""
    pressed = threading.Event()
    real_wait = concurrent.futures.wait

    def wait(*args, **kwargs):
        if pressed.is_set():
            raise KeyboardInterrupt
        return real_wait(*args, **kwargs)

    monkeypatch.setattr(cli_host_run.concurrent.futures, 'wait', wait)

    def ctrl_c(uuid):
        pressed.set()

    api = FakeApi(
        [_server('a', 'ACTIVE', None), _server('b', 'ACTIVE', None)],
        after=lambda uuid, body: {'OS-EXT-STS:task_state': 'migrating'},
        on_read=ctrl_c,
    )
    items = moves.plan(
        list(api.servers.values()), moves.DRAIN_MOVES, 'a drain'
    )
    args = _args()
    finished = cli_host_run._run(args, api, items)
    assert finished is False
    assert [(i.uuid, i.result) for i in items] == [
        ('a', moves.INTERRUPTED),
        ('b', moves.NOT_STARTED),
    ]
    assert [uuid for uuid, _body in api.actions] == ['a']
    capsys.readouterr()
    assert cli_host_run._summary(args, items, finished, []) == 130
    err = capsys.readouterr().err
    assert 'the moves under way go on in the cloud (vm-a)' in err
