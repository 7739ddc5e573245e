"""Daemons on a three-node RabbitMQ cluster with quorum queues, and its
nodes killed or restarted mid-boot.

A private cluster (:class:`nimbus.testing.rabbit_cluster.RabbitCluster`:
three nodes of its own, never the machine's RabbitMQ) carries the API bus
and the cell bus; every daemon (API, placement API, scheduler, super
conductor, cell conductor, a compute process simulating 10 hosts, the
accelerator API and an accelerator agent giving each host a fake GPU) gets a
``transport_url`` listing all three nodes and the ``[oslo_messaging_rabbit]``
section of etc/nimbus/examples/rabbitmq-cluster/rabbitmq-cluster.conf as
shipped (``rabbit_quorum_queue``, ``rabbit_transient_quorum_queue`` for the
reply queues, ``rabbit_stream_fanout`` for the fanout queues). Each row:
200 boots at 10/s, one in four with a GPU device profile, deleting one in
four as they go; at 40% the fault:

- the node that leads the most quorum queues killed with ``kill -9``,
  started again 10 s later;
- a rolling restart: each node stopped and started in turn;
- that node cut off from the other two for 20 s (the Erlang distribution
  between them: each side given a wrong cookie for the other), so that,
  in the minority under ``cluster_partition_handling = pause_minority``,
  it pauses and drops its clients; then healed.

Every accepted boot ends ACTIVE (none ERROR), none is built twice (one
"is ACTIVE on" line per server in the compute's log), placement holds
allocations for exactly the ACTIVE servers, no ARQ lacks its instance and
the Bound ARQs are exactly those of the ACTIVE GPU servers, a new server
(and a new GPU server) boots, and the
fault table (tests/faults/conftest.py) prints the seconds to recover.

Marked ``faults_full``: ``make test-faults`` runs it (about 6 minutes),
``make test`` does not.
"""

import collections
import configparser
import pathlib
import re

import pytest

from nimbus.testing import accel_daemons
from harness import faults
from nimbus.testing import infra
from harness import injectors
from nimbus.testing import rabbit_cluster
from tests.faults import conftest

pytestmark = [pytest.mark.integration, pytest.mark.faults_full]

BOOTS = 200
HOSTS = 10
PROFILE = 'cluster-gpu'
# The shipped example's queue options, as they are.
EXAMPLE = (
    pathlib.Path(__file__).resolve().parents[2]
    / 'etc'
    / 'nimbus'
    / 'examples'
    / 'rabbitmq-cluster'
    / 'rabbitmq-cluster.conf'
)


def _queue_options():
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(EXAMPLE)
    return dict(parser['oslo_messaging_rabbit'])


_ACTIVE = re.compile(r'Instance ([0-9a-f-]{36}) is ACTIVE on ')


@pytest.fixture(scope='module')
def cluster_cloud(tmp_path_factory):
    cleanups = []
    try:
        cluster = rabbit_cluster.RabbitCluster().__enter__()
        cleanups.append(cluster.stop)
        buses = [cluster.vhost(), cluster.vhost()]
        databases = {}
        for name in ('api', 'cell0', 'cell1', 'placement', 'accelerator'):
            url, cleanup = infra.database('mysql')
            cleanups.append(cleanup)
            databases[name] = url
        cloud = accel_daemons.AccelDaemonCloud(
            str(tmp_path_factory.mktemp('rabbit-cluster')),
            buses[0],
            buses[1],
            databases,
            hosts=0,
            common_options={
                'DEFAULT': {'report_interval': 2, 'service_down_time': 10},
                'rpc': {'rpc_response_timeout': 20},
                'oslo_messaging_rabbit': _queue_options(),
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
        cleanups.append(cloud.stop)
        cloud.start()
        cloud.start_accelerator()
        cloud.start_simulated('c1', HOSTS)
        cloud.start_agent('c1', HOSTS, {'fake_gpu': {'num_accelerators': 64}})
        api, (flavor, accel_flavor), image = faults.ready_for_bursts(
            cloud, HOSTS, PROFILE, 'cluster'
        )
        yield cluster, cloud, buses, api, (flavor, accel_flavor), image
    finally:
        for cleanup in reversed(cleanups):
            cleanup()


def _active_lines(cloud):
    """``{server uuid: times a compute logged it ACTIVE}``."""
    counts = collections.Counter()
    for daemon in cloud.daemons.values():
        with open(daemon.log_file, errors='replace') as f:
            counts.update(_ACTIVE.findall(f.read()))
    return counts


def test_kill9_of_the_queue_leader_mid_boot(cluster_cloud):
    cluster, cloud, buses, api, (flavor, accel_flavor), image = cluster_cloud
    # The daemons declared quorum queues (the topic queues and, with
    # rabbit_transient_quorum_queue, the reply queues) and streams (the
    # fanout queues), replicated on every node.
    types = collections.defaultdict(set)
    for bus in buses:
        for queue in cluster.queues(bus):
            types[queue['type']].add(queue['name'].split('.')[0])
    for topic in ('conductor', 'scheduler', 'compute'):
        assert topic in types['quorum'], dict(types)
    assert any(n.startswith('reply_') for n in types['quorum']), types
    assert any(n.endswith('_fanout') for n in types['stream']), types
    assert not types['classic'], dict(types)
    struck = []
    row = faults.run(
        cloud,
        api,
        flavor,
        image,
        'full kill -9 RabbitMQ queue leader (3-node cluster)',
        injectors.kill9_queue_leader(cluster, buses, struck),
        boots=BOOTS,
        accel_flavor=accel_flavor,
    )
    conftest.ROWS.append(row)
    node, connections, led, moved = struck[0]
    conftest.EVIDENCE.append(
        '%s: killed %s, which held %d client connections and led %d '
        'quorum queues; %d of them led by another node while it was down'
        % (row.fault, node, connections, led, moved)
    )
    assert connections > 0 and led > 0 and moved == led, struck
    _check(cloud, row)


def _check(cloud, row):
    assert row.consistent(), '%s\nprobes: %s %s\n%s' % (
        faults.table([row]),
        row.probes,
        row.probe_error,
        cloud.logs()[-6000:],
    )
    # Every accepted boot is listed unless its delete was accepted, and
    # every listed one is ACTIVE.
    assert row.servers + row.deleted == row.booted, faults.table([row])
    assert row.error == 0 and row.active == row.servers, faults.table([row])
    twice = {u: n for u, n in _active_lines(cloud).items() if n > 1}
    assert not twice, 'built twice: %s' % twice


def test_rolling_restart_of_every_node_mid_boot(cluster_cloud):
    cluster, cloud, buses, api, (flavor, accel_flavor), image = cluster_cloud
    struck = []
    row = faults.run(
        cloud,
        api,
        flavor,
        image,
        'full RabbitMQ rolling restart (3-node cluster)',
        injectors.rolling_restart(cluster, struck),
        boots=BOOTS,
        accel_flavor=accel_flavor,
    )
    conftest.ROWS.append(row)
    conftest.EVIDENCE.append(
        '%s: stopped and started %s'
        % (
            row.fault,
            ', '.join('%s (%d connections)' % node for node in struck),
        )
    )
    assert [node for node, _ in struck] == [n.node for n in cluster.nodes]
    assert sum(count for _, count in struck) > 0, struck
    _check(cloud, row)


def test_partition_of_the_queue_leader_mid_boot(cluster_cloud):
    cluster, cloud, buses, api, (flavor, accel_flavor), image = cluster_cloud
    struck = []
    row = faults.run(
        cloud,
        api,
        flavor,
        image,
        'full RabbitMQ node partitioned 20 s (3-node cluster)',
        injectors.partition_leader(cluster, buses, struck),
        boots=BOOTS,
        accel_flavor=accel_flavor,
    )
    conftest.ROWS.append(row)
    node, connections, paused = struck[0]
    conftest.EVIDENCE.append(
        '%s: cut %s (%d client connections) off from the other nodes; '
        'it paused (no AMQP): %s' % (row.fault, node, connections, paused)
    )
    assert connections > 0 and paused, struck
    _check(cloud, row)
