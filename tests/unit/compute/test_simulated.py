"""The shared machinery of simulated hosts: names, sizes, the ticker."""

import concurrent.futures as futures
import threading

from nimbus.common import config
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
