"""Faults during a burst of boots and deletes, on RabbitMQ and MariaDB.

One cloud of daemons (API, placement API, super conductor, scheduler, a
cell conductor, and a compute process simulating 10 hosts) serves every
row. Each row boots servers at a steady rate, deleting some as it goes;
the fault strikes when 40% of the boots are sent. Then: every server is
ACTIVE or ERROR (an ERROR with a fault that says why), none is stuck in
BUILD or DELETING, placement holds allocations for exactly the ACTIVE
servers, and a new server boots (the struck service serves again). The
table (``make test-faults`` prints it) gives servers, ACTIVE, ERROR,
stuck, leaked and missing allocations and the seconds to recover.

``make test`` runs the quick rows (a kill -9 of the compute and of the
scheduler, 60 boots each); ``make test-faults`` runs every row with 200
boots, including the RabbitMQ and MariaDB restarts, which disturb every
user of those servers on the machine.
"""

import pytest

from nimbus.allinone.client import ComputeClient
from nimbus.testing import daemons
from nimbus.testing import faults
from tests.faults import conftest

pytestmark = pytest.mark.integration

QUICK_BOOTS = 60
FULL_BOOTS = 200


@pytest.fixture(scope='module')
def cloud(tmp_path_factory):
    from nimbus.testing import infra

    cleanups = []
    try:
        buses = []
        for _ in range(2):
            url, cleanup = infra.rabbit_vhost()
            cleanups.append(cleanup)
            buses.append(url)
        databases = {}
        for name in ('api', 'cell0', 'cell1', 'placement'):
            url, cleanup = infra.mysql_database()
            cleanups.append(cleanup)
            databases[name] = url
        cloud = daemons.DaemonCloud(
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
        cloud.prepare()
        cloud.start()
        cloud.start_simulated('c1', 10)
        api = ComputeClient(cloud.api_url + '/v2.1')
        daemons.wait_for(
            lambda: (
                len(
                    [
                        h
                        for h in api.get('/os-hypervisors/detail')[
                            'hypervisors'
                        ]
                        if h.get('state') == 'up'
                    ]
                )
                == 10
            ),
            120,
            'the 10 hosts',
            list(cloud.daemons.values()),
        )
        cloud.manage('cell', 'discover-hosts')
        flavor = api.create_flavor('fault.tiny', 1, 256, 1)['id']
        image = api.create_image('fault-image')['id']
        yield cloud, api, flavor, image
        cloud.stop()
    finally:
        for cleanup in reversed(cleanups):
            cleanup()


def _row(cloud, name, fault, boots):
    cloud_, api, flavor, image = cloud
    row = faults.run(
        cloud_, api, flavor, image, name, fault(cloud_), boots=boots
    )
    conftest.ROWS.append(row)
    assert row.consistent(), '%s\n%s' % (
        faults.table([row]),
        cloud_.logs()[-6000:],
    )
    # Every accepted boot is listed unless its delete was accepted.
    assert row.servers + row.deleted == row.booted, faults.table([row])


QUICK = [
    ('kill -9 compute', lambda c: faults.kill_and_restart(c, 'c1')),
    ('kill -9 scheduler', lambda c: faults.kill_and_restart(c, 'scheduler')),
]
FULL = [
    ('kill -9 api', lambda c: faults.kill_and_restart(c, 'api')),
    (
        'kill -9 placement-api',
        lambda c: faults.kill_and_restart(c, 'placement-api'),
    ),
    (
        'kill -9 super conductor',
        lambda c: faults.kill_and_restart(c, 'conductor'),
    ),
    (
        'kill -9 cell conductor',
        lambda c: faults.kill_and_restart(c, 'cell1-conductor'),
    ),
    ('compute frozen 20 s', lambda c: faults.freeze(c, 'c1')),
    ('RabbitMQ restart', lambda c: faults.rabbitmq_restart()),
    ('MariaDB restart', lambda c: faults.mariadb_restart()),
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
