"""The faults of the fault suite (:mod:`harness.faults`): each
function returns the fault, a callable that strikes and returns once the
fault is over (the daemon restarted, the proxy healed, the compute fast
again).
"""

import os
import time


def kill_and_restart(cloud, name, down_s=3.0):
    """``kill -9`` daemon ``name`` (and its process group), restart it
    after ``down_s`` seconds."""

    def fault():
        daemon = cloud.daemons[name]
        daemon.kill9()
        time.sleep(down_s)
        daemon.start()

    return fault


def freeze(cloud, name, frozen_s=20.0):
    """SIGSTOP daemon ``name`` for ``frozen_s`` seconds (no heartbeats, no
    messages: cut off as far as everyone else can tell), then SIGCONT."""
    import signal

    def fault():
        pid = cloud.daemons[name].process.pid
        os.killpg(pid, signal.SIGSTOP)
        time.sleep(frozen_s)
        os.killpg(pid, signal.SIGCONT)

    return fault


def cut_from_broker(proxy, cut_s=20.0):
    """Cut every connection through ``proxy`` (a
    :class:`~nimbus.testing.tcp_proxy.TcpProxy` between one daemon and
    RabbitMQ) and refuse new ones for ``cut_s`` seconds, then heal it: the
    daemon is cut off from the broker, and only it."""

    def fault():
        proxy.cut()
        time.sleep(cut_s)
        proxy.heal()

    return fault


def slow(cloud, name, spawn_s=5.0, slow_s=30.0):
    """Daemon ``name`` (a compute on the fake driver) spawns each guest in
    ``spawn_s`` seconds for ``slow_s`` seconds, then at full speed again:
    its config file's ``[fake_driver] spawn_seconds`` rewritten and
    reloaded by SIGHUP (a mutable option) each time."""
    import signal

    def set_spawn(seconds):
        daemon = cloud.daemons[name]
        config = cloud.config_of(name)
        if not config.has_section('fake_driver'):
            config.add_section('fake_driver')
        config.set('fake_driver', 'spawn_seconds', str(seconds))
        with open(daemon.config_file, 'w') as f:
            config.write(f)
        os.kill(daemon.process.pid, signal.SIGHUP)

    def fault():
        set_spawn(spawn_s)
        time.sleep(slow_s)
        set_spawn(0.0)

    return fault


def duplicate_casts(cloud, duplicated_s=15.0):
    """For ``duplicated_s`` seconds every build cast of every daemon goes
    out twice: the cloud's daemons must run under
    :mod:`harness.twice` (``cloud.launcher``), which doubles them
    while its flag file exists."""
    from harness import twice

    def fault():
        flag = twice.flag_path(cloud.daemons['api'].config_file)
        with open(flag, 'w'):
            pass
        try:
            time.sleep(duplicated_s)
        finally:
            os.unlink(flag)

    return fault


def rabbitmq_restart(node, down_s=3.0):
    """``rabbitmqctl -n <node> stop_app`` / ``start_app`` on ``node``, a
    private :class:`~nimbus.testing.private_rabbit.RabbitNode` the cloud
    runs on (never the machine's shared RabbitMQ): every connection
    drops."""

    def fault():
        node.restart_app(down_s)

    return fault


def mariadb_restart(server, down_s=3.0):
    """A clean shutdown of ``server``, a private
    :class:`~nimbus.testing.private_mariadb.MariaDBServer` the cloud's
    databases live on (never the machine's shared MariaDB), and its start
    ``down_s`` seconds later; returns once it answers SQL."""

    def fault():
        server.restart(down_s)

    return fault


def kill_one_of_each_pair(cloud, down_s=10.0, seed=None, struck=None):
    """Every daemon run active-active (``cloud.replica_groups()``): in a
    random order, ``kill -9`` one member of the group chosen at random,
    restart it ``down_s`` seconds later, wait until it runs again, and go
    on to the next group. ``struck`` (a list) receives the names killed.
    Its partners serve alone meanwhile: that is what is under test."""
    import random

    rng = random.Random(seed)

    def fault():
        groups = sorted(cloud.replica_groups().items())
        rng.shuffle(groups)
        for _group, names in groups:
            name = rng.choice(names)
            daemon = cloud.daemons[name]
            daemon.kill9()
            if struck is not None:
                struck.append(name)
            time.sleep(down_s)
            daemon.start()
            time.sleep(2.0)  # let it connect before the next kill

    return fault


def kill9_queue_leader(cluster, vhosts, struck, down_s=10.0):
    """``kill -9`` the node of ``cluster`` (a private
    :class:`~nimbus.testing.rabbit_cluster.RabbitCluster`) that leads the
    most quorum queues of ``vhosts`` (transport URLs), start it again
    ``down_s`` seconds later and wait until it has rejoined. ``struck``
    (a list) receives ``(node name, client connections it held, queues it
    led, those of them another node led while it was down)``: the proof
    the fault struck."""

    def leaders():
        return {
            (vhost, queue): leader
            for vhost in vhosts
            for queue, leader in cluster.queue_leaders(vhost).items()
        }

    def fault():
        node, _count = cluster.leading_node(vhosts)
        led = {key for key, leader in leaders().items() if leader == node.node}
        connections = cluster.connections_on(node)
        node.kill9()
        time.sleep(down_s)
        now = leaders()
        moved = {key for key in led if now.get(key, node.node) != node.node}
        struck.append((node.node, connections, len(led), len(moved)))
        node.start()
        cluster.wait_running(cluster.nodes)

    return fault


def rolling_restart(cluster, struck, down_s=3.0):
    """Stop and start each node of ``cluster`` (a private
    :class:`~nimbus.testing.rabbit_cluster.RabbitCluster`) in turn, as an
    operator's rolling upgrade does: ``rabbitmqctl stop`` (its data stays),
    ``down_s`` seconds down, started again, and the next one only once
    every node runs. ``struck`` (a list) receives ``(node name, client
    connections it held when stopped)`` per node."""

    def fault():
        for node in cluster.nodes:
            struck.append((node.node, cluster.connections_on(node)))
            node.stop()
            time.sleep(down_s)
            node.start()
            cluster.wait_running(cluster.nodes)

    return fault


def partition_leader(cluster, vhosts, struck, cut_s=20.0):
    """Cut the node of ``cluster`` leading the most quorum queues of
    ``vhosts`` off from the other two for ``cut_s`` seconds
    (:meth:`~nimbus.testing.rabbit_cluster.RabbitCluster.partition`: the
    Erlang distribution between them, not the clients' connections; the
    node, in the minority, pauses and drops its clients), then heal it.
    ``struck`` receives ``(node name, client connections it held, whether
    it stopped serving AMQP while cut off)``."""

    def fault():
        node, _count = cluster.leading_node(vhosts)
        connections = cluster.connections_on(node)
        cluster.partition(node)
        deadline = time.monotonic() + cut_s
        paused = False
        while time.monotonic() < deadline:
            paused = paused or not node.accepts_amqp()
            time.sleep(1.0)
        struck.append((node.node, connections, paused))
        cluster.heal(node)
        node.wait_ready()

    return fault
