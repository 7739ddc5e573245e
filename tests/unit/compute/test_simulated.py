"""The shared machinery of simulated hosts: names, sizes, the ticker."""

import concurrent.futures as futures
import threading

from nimbus.common import config
from nimbus.common import rpc
from nimbus.messaging_internals import simulated
from nimbus.compute.virt import fake


def test_host_names():
    assert simulated.host_names('cn', 3) == ['cn-0001', 'cn-0002', 'cn-0003']
    assert simulated.host_names('cn', 12000)[-1] == 'cn-12000'


def test_seeded_spread_of_host_sizes():
    conf = config.build_conf(
        [],
        overrides={
            'fake_driver': {
                'vcpus': 8,
                'vcpus_max': 64,
                'memory_mb': 8192,
                'memory_mb_max': 65536,
                'spread_seed': 5,
            }
        },
    )
    sizes = [fake.host_size(conf, h) for h in simulated.host_names('h', 50)]
    assert sizes == [
        fake.host_size(conf, h) for h in simulated.host_names('h', 50)
    ]  # stable
    assert len(set(sizes)) > 10
    for vcpus, memory_mb, disk_gb in sizes:
        assert 8 <= vcpus <= 64
        assert 8192 <= memory_mb <= 65536 and memory_mb % 1024 == 0
        assert disk_gb == 2000  # no disk_gb_max
    plain = config.build_conf([])
    assert fake.host_size(plain, 'x') == (32, 131072, 2000)


def test_ticker_runs_staggered_tasks_once_at_a_time():
    pool = futures.ThreadPoolExecutor(max_workers=4)
    ticker = simulated.Ticker(pool, seed=1)
    runs = []
    slow = threading.Event()

    def blocked():
        runs.append('slow')
        slow.wait(5)

    done = threading.Event()

    def fast():
        runs.append('fast')
        if runs.count('fast') >= 3:
            done.set()

    ticker.add(0.01, blocked, first=0)
    handle = ticker.add(0.02, fast, first=0)
    assert done.wait(5)
    # The slow task was never started again while it still ran.
    assert runs.count('slow') == 1
    ticker.cancel(handle)
    slow.set()
    ticker.stop()
    pool.shutdown()


class _NoTicker:
    """Takes the wheel's entry; the test turns the wheel by hand."""

    def __init__(self):
        self.added = []

    def add(self, interval, func, first=None, name=None):
        self.added.append((interval, func, first, name))
        return len(self.added)


def test_a_wheel_runs_each_host_once_per_turn_in_slices():
    ticker = _NoTicker()
    wheel = simulated.Wheel(ticker, 60, 'update', slots=4)
    # One ticker entry for every host, a quarter of the interval apart.
    assert [(i, n) for i, _f, _first, n in ticker.added] == [(15.0, 'update')]
    runs = []
    for index in range(10):
        wheel.add('h%d' % index, lambda index=index: runs.append(index))

    def boom():
        raise RuntimeError('a host fails')

    wheel.add('bad', boom)
    assert len(wheel) == 11
    sizes = [len(wheel.tick()) for _ in range(4)]
    # Spread: no slice has two hosts more than another; each ran once.
    assert max(sizes) - min(sizes) <= 1 and sum(sizes) == 11
    assert sorted(runs) == list(range(10))  # the failure stopped no one
    wheel.remove('h3')
    runs.clear()
    for _ in range(4):
        wheel.tick()
    assert sorted(runs) == [i for i in range(10) if i != 3]


def test_a_host_group_puts_each_task_of_every_host_on_one_wheel():
    class Host:
        endpoints = []

        def __init__(self):
            self.calls = 0

        def start(self):
            pass

        def report(self):
            self.calls += 1

        def periodic_tasks(self):
            return [(30, self.report)]

        def stop(self):
            pass

    conf = config.build_conf([])
    transport = rpc.get_transport(conf, 'inproc:///wheel-test')
    group = simulated.HostGroup(transport, 'wheel', workers=2, rpc_workers=1)
    hosts = [('h%d' % i, Host()) for i in range(50)]
    try:
        assert group.start_hosts(hosts) == []
        assert list(group.wheels) == [(30, 'report')]
        wheel = group.wheels[(30, 'report')]
        assert len(wheel) == 50
        group.stop_host('h0')
        assert len(wheel) == 49 and 'h0' not in group.hosts
    finally:
        group.stop()
        rpc.cleanup_transports(conf)


def test_a_wheel_prepares_each_slice_before_its_calls():
    ticker = _NoTicker()
    seen = []
    wheel = simulated.Wheel(
        ticker, 60, 'update', slots=2, prepare=lambda hosts: seen.append(hosts)
    )
    for index in range(4):
        wheel.add('h%d' % index, lambda index=index: seen.append(index))
    wheel.tick()
    wheel.tick()
    # One prepare per slice, with its hosts, before their calls.
    assert seen == [['h0', 'h2'], 0, 2, ['h1', 'h3'], 1, 3]

    def failing(hosts):
        raise RuntimeError('the batched read failed')

    wheel.prepare = failing
    seen.clear()
    wheel.tick()
    assert seen == [0, 2]  # the calls run anyway
    empty = simulated.Wheel(_NoTicker(), 60, 'none', slots=2, prepare=failing)
    assert empty.tick() == []  # no host, no prepare


def test_a_host_group_gives_its_wheels_the_prepare_of_their_task():
    conf = config.build_conf([])
    transport = rpc.get_transport(conf, 'inproc:///wheel-prepare')
    group = simulated.HostGroup(transport, 'wheel', workers=2, rpc_workers=1)
    try:
        before = group._wheel(30, 'report')
        group.prepare('report', len)
        assert before.prepare is len
        assert group._wheel(60, 'report').prepare is len
        assert group._wheel(60, 'other').prepare is None
    finally:
        group.stop()
        rpc.cleanup_transports(conf)
