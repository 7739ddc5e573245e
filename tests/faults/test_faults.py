"""Faults during a burst of boots and deletes, on RabbitMQ and MariaDB.

One cloud of daemons (API, placement API, super conductor, scheduler, a
cell conductor, a compute process simulating 10 hosts, the accelerator API
and an accelerator agent serving the same 10 hosts, one fake GPU each)
serves every row. The compute reaches RabbitMQ through a TCP proxy (to cut
it off), and every daemon runs under :mod:`harness.twice` (to send
build casts twice). Each row boots servers at a steady rate, one in four
with a flavor asking for a GPU through a device profile, deleting some as
it goes; the fault strikes when 40% of the boots are sent. Then: every
server is ACTIVE or ERROR (an ERROR with a fault that says why), none is
stuck in BUILD or DELETING, placement holds allocations for exactly the
ACTIVE servers, no ARQ lacks its instance, the Bound ARQs are exactly
those of the ACTIVE GPU servers, and a new server (and a new GPU server)
boots: the struck service serves again. The table (``make test-faults``
prints it) gives servers, ACTIVE, ERROR, stuck, leaked and missing
allocations, orphan ARQs, ARQ mismatches and the seconds to recover.

The cloud runs on a RabbitMQ node and a MariaDB server of its own
(:mod:`nimbus.testing.private_rabbit`, :mod:`nimbus.testing.private_mariadb`):
the RabbitMQ and MariaDB restart rows restart those, never the machine's
shared services.

``make test`` runs the quick rows (a kill -9 of the compute and of the
scheduler, 60 boots each); ``make test-faults`` runs every row with 200
boots, including the RabbitMQ and MariaDB restarts.
"""

from urllib import parse

import pytest

from nimbus.testing import accel_daemons
from harness import faults
from harness import injectors
from nimbus.testing import private_mariadb
from nimbus.testing import private_rabbit
from nimbus.testing import tcp_proxy
from tests.faults import conftest

pytestmark = pytest.mark.integration

QUICK_BOOTS = 60
FULL_BOOTS = 200
HOSTS = 10
PROFILE = 'one-gpu'
# Each host's fake GPU offers this many accelerators: room for every GPU
# server the whole table leaves ACTIVE.
GPU_SLOTS = 64


def _through(proxy, url):
    """``url`` (a transport URL on RabbitMQ) going through ``proxy``."""
    parts = parse.urlsplit(url)
    netloc = parts.netloc.rsplit(':', 1)[0] + ':%d' % proxy.port
    return parse.urlunsplit(parts._replace(netloc=netloc))


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
        for name in ('api', 'cell0', 'cell1', 'placement', 'accelerator'):
            url, cleanup = mariadb.database()
            cleanups.append(cleanup)
            databases[name] = url
        proxy = tcp_proxy.TcpProxy(parse.urlsplit(buses[1]).port).start()
        cleanups.append(proxy.stop)
        cloud = accel_daemons.AccelDaemonCloud(
            str(tmp_path_factory.mktemp('faults')),
            buses[0],
            buses[1],
            databases,
            hosts=0,
            common_options={
                'DEFAULT': {'report_interval': 2, 'service_down_time': 10},
                'rpc': {'rpc_response_timeout': 20},
                'conductor': {
                    'build_check_interval': 5,
                    'instance_build_timeout': 90,
                    'build_stall_timeout': 60,
                    'build_request_timeout': 60,
                    'recovery_interval': 10,
                    'audit_grace': 30,
                },
            },
        )
        cloud.launcher = 'harness.twice'
        cloud.prepare()
        cloud.start()
        cloud.start_accelerator()
        cloud.proxy = proxy
        cloud.rabbit = rabbit
        cloud.mariadb = mariadb
        cloud.start_simulated(
            'c1',
            HOSTS,
            {
                'rpc': {'transport_url': _through(proxy, buses[1])},
                'compute': {'arq_binding_timeout': 60},
            },
        )
        cloud.start_agent(
            'c1', HOSTS, {'fake_gpu': {'num_accelerators': GPU_SLOTS}}
        )
        api, (flavor, accel_flavor), image = faults.ready_for_bursts(
            cloud, HOSTS, PROFILE, 'fault'
        )
        yield cloud, api, (flavor, accel_flavor), image
        cloud.stop()
    finally:
        for cleanup in reversed(cleanups):
            cleanup()


def _row(cloud, name, fault, boots):
    cloud_, api, (flavor, accel_flavor), image = cloud
    row = faults.run(
        cloud_,
        api,
        flavor,
        image,
        name,
        fault(cloud_),
        boots=boots,
        accel_flavor=accel_flavor,
    )
    conftest.ROWS.append(row)
    assert row.consistent(), '%s\nprobes: %s %s\n%s' % (
        faults.table([row]),
        row.probes,
        row.probe_error,
        cloud_.logs()[-6000:],
    )
    # Every accepted boot is listed unless its delete was accepted.
    assert row.servers + row.deleted == row.booted, faults.table([row])
    kind = name.removeprefix('full ')
    if kind in EVIDENCE:
        what, count = EVIDENCE[kind](cloud_)
        conftest.EVIDENCE.append('%s: %s: %d' % (row.fault, what, count))
        assert count > 0, 'the fault did not strike: no %s' % what


def _log_count(cloud, text):
    count = 0
    for daemon in cloud.daemons.values():
        with open(daemon.log_file, errors='replace') as f:
            count += f.read().count(text)
    return count


# Proof that a fault struck: what it leaves behind, which must be there.
EVIDENCE = {
    'compute cut from broker 20 s': lambda c: (
        'connections to RabbitMQ cut (compute)',
        c.proxy.cut_connections,
    ),
    'slow compute 5 s spawns': lambda c: (
        'SIGHUP reloads of the compute',
        _log_count(c, 'SIGHUP: reloading'),
    ),
    'build casts twice': lambda c: (
        'build casts sent twice (every daemon)',
        _log_count(c, 'sent twice'),
    ),
}


QUICK = [
    ('kill -9 compute', lambda c: injectors.kill_and_restart(c, 'c1')),
    (
        'kill -9 scheduler',
        lambda c: injectors.kill_and_restart(c, 'scheduler'),
    ),
]
FULL = [
    ('kill -9 api', lambda c: injectors.kill_and_restart(c, 'api')),
    (
        'kill -9 placement-api',
        lambda c: injectors.kill_and_restart(c, 'placement-api'),
    ),
    (
        'kill -9 super conductor',
        lambda c: injectors.kill_and_restart(c, 'conductor'),
    ),
    (
        'kill -9 cell conductor',
        lambda c: injectors.kill_and_restart(c, 'cell1-conductor'),
    ),
    ('compute frozen 20 s', lambda c: injectors.freeze(c, 'c1')),
    (
        'kill -9 accel-api',
        lambda c: injectors.kill_and_restart(c, 'accelerator-api'),
    ),
    (
        'kill -9 accel-agent',
        lambda c: injectors.kill_and_restart(c, 'agent-c1'),
    ),
    (
        'compute cut from broker 20 s',
        lambda c: injectors.cut_from_broker(c.proxy),
    ),
    ('slow compute 5 s spawns', lambda c: injectors.slow(c, 'c1')),
    ('build casts twice', lambda c: injectors.duplicate_casts(c)),
    ('RabbitMQ restart', lambda c: injectors.rabbitmq_restart(c.rabbit)),
    ('MariaDB restart', lambda c: injectors.mariadb_restart(c.mariadb)),
]


@pytest.mark.parametrize('name,fault', QUICK, ids=[q[0] for q in QUICK])
def test_quick(cloud, name, fault):
    _row(cloud, name, fault, QUICK_BOOTS)


@pytest.mark.faults_full
@pytest.mark.parametrize(
    'name,fault', QUICK + FULL, ids=['full ' + f[0] for f in QUICK + FULL]
)
def test_full(cloud, name, fault):
    _row(cloud, 'full ' + name, fault, FULL_BOOTS)
