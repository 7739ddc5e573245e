"""A private RabbitMQ cluster for tests: three (``size``) private nodes
(:class:`nimbus.testing.private_rabbit.RabbitNode`: their own node names,
AMQP and distribution ports, data directories) sharing one epmd and one
Erlang cookie of their own, joined with ``rabbitmqctl join_cluster``;
never the machine's RabbitMQ node. For the faults of a clustered
RabbitMQ with quorum queues (tests/faults/test_rabbit_cluster.py): which
node leads which quorum queue, a node killed, restarted, or cut off from
the others.

No pytest at module level: integrators import this as a library.
"""

import collections
import json
import os
import secrets
import shutil
import tempfile

from nimbus.testing import managed
from nimbus.testing.private_rabbit import Epmd
from nimbus.testing.private_rabbit import RabbitNode
from nimbus.testing.private_rabbit import wait_until


class RabbitCluster(managed.Managed):
    """A private RabbitMQ cluster of ``size`` :class:`RabbitNode` s (see the
    module docstring): one epmd of its own, one cookie, node names
    ``nimbus-test-<random>-<n>@localhost``, all under one temporary
    directory. ``with RabbitCluster() as cluster:`` starts the nodes side
    by side, joins the others to the first and waits until every node
    reports all of them running; leaving the block stops them all.

    Quorum queues (``x-queue-type: quorum``) declared on it are
    replicated on every node: :meth:`queue_leaders` says which node leads
    each, :meth:`leading_node` the node that leads most, the one whose
    loss moves most leaders."""

    def __init__(self, size=3, base_dir=None):
        self._own_dir = base_dir is None
        self.base_dir = base_dir or tempfile.mkdtemp(
            prefix='nimbus-rabbit-cluster-'
        )
        self.cookie = secrets.token_hex(20)
        self.epmd = Epmd(os.path.join(self.base_dir, 'epmd.out'))
        prefix = 'nimbus-test-%s' % secrets.token_hex(4)
        self.nodes = [
            RabbitNode(
                base_dir=os.path.join(self.base_dir, 'node%d' % n),
                name='%s-%d' % (prefix, n),
                epmd=self.epmd,
                cookie=self.cookie,
                # A node cut off from the others stops serving (its
                # clients move to the majority) until it sees them again.
                conf='cluster_partition_handling = pause_minority\n',
            )
            for n in range(1, size + 1)
        ]

    def start(self, timeout=180):
        self.epmd.start()
        for node in self.nodes:
            node.launch()
        for node in self.nodes:
            node.wait_ready(timeout)
        first = self.nodes[0]
        for node in self.nodes[1:]:
            node.ctl('stop_app')
            node.ctl('join_cluster', first.node)
            node.ctl('start_app')
            node.wait_ready(timeout)
        self.wait_running(self.nodes, timeout)
        return self

    def running_nodes(self, via=None):
        """The node names a running node (``via``, else the first one
        that answers) reports running in the cluster."""
        for node in [via] if via else self.nodes:
            if node.process is None or node.process.poll() is not None:
                continue
            try:
                status = json.loads(
                    node.ctl('cluster_status', '--formatter', 'json')
                )
            except (RuntimeError, ValueError):
                continue
            return set(status.get('running_nodes', ()))
        return set()

    def wait_running(self, nodes, timeout=180):
        """Until every node of ``nodes`` is up and each sees them all."""
        want = {node.node for node in nodes}
        wait_until(
            lambda: all(want <= self.running_nodes(node) for node in nodes),
            timeout,
            'RabbitMQ cluster nodes %s running' % sorted(want),
        )

    def url(self, vhost=''):
        """A transport URL listing every node (oslo.messaging fails over
        from one to the next)."""
        return 'rabbit://%s/%s' % (
            ','.join(
                'guest:guest@127.0.0.1:%d' % node.port for node in self.nodes
            ),
            vhost,
        )

    def _any(self):
        for node in self.nodes:
            if node.process is not None and node.process.poll() is None:
                return node
        raise RuntimeError('no node of the cluster is running')

    def vhost(self):
        """A fresh vhost on the cluster (guest may use it); its URL with
        every node's host."""
        name = 'nimbus-test-%s' % secrets.token_hex(5)
        node = self._any()
        node.ctl('add_vhost', name)
        node.ctl('set_permissions', '-p', name, 'guest', '.*', '.*', '.*')
        return self.url(name)

    def queues(self, vhost):
        """``[{'name', 'type', 'leader'}]``: the queues of ``vhost`` (a
        name, or a URL ending in it); ``leader`` is set for quorum
        queues."""
        name = vhost.rsplit('/', 1)[-1]
        items = ('name', 'type', 'leader', '--formatter', 'json')
        return json.loads(self._any().ctl('list_queues', '-p', name, *items))

    def connections_on(self, node):
        """How many client connections ``node`` holds (those to its AMQP
        port)."""
        rows = json.loads(
            self._any().ctl('list_connections', 'port', '--formatter', 'json')
        )
        return sum(1 for row in rows if row.get('port') == node.port)

    def queue_leaders(self, vhost):
        """``{queue name: leading node}`` of the quorum queues of
        ``vhost``."""
        return {
            row['name']: row['leader']
            for row in self.queues(vhost)
            if row.get('type') == 'quorum' and row.get('leader')
        }

    def leading_node(self, vhosts):
        """The :class:`RabbitNode` leading the most quorum queues of
        ``vhosts``, and how many it leads."""
        counts = collections.Counter()
        for vhost in vhosts:
            counts.update(self.queue_leaders(vhost).values())
        if not counts:
            raise RuntimeError('no quorum queue on %s' % list(vhosts))
        leader, count = counts.most_common(1)[0]
        return next(n for n in self.nodes if n.node == leader), count

    @staticmethod
    def _cookie_for(node, others, cookie, disconnect=False):
        """``node`` uses ``cookie`` towards ``others``; ``disconnect``:
        and drops its links to them."""
        calls = [
            "erlang:set_cookie('%s', '%s')" % (other.node, cookie)
            for other in others
        ]
        if disconnect:
            calls += [
                "erlang:disconnect_node('%s')" % other.node for other in others
            ]
        node.ctl('eval', ', '.join(calls) + ', ok.')

    def partition(self, node):
        """Cut ``node`` off from the other nodes: each side is given a
        wrong Erlang cookie for the other (a different one on each side:
        two equal ones would still shake hands), then ``node`` drops its
        links, both at once; the distribution cannot reconnect, while
        rabbitmqctl (the cookie file's cookie) still reaches every node.
        The node, in the minority, pauses (``pause_minority``): its
        clients lose their connections and move to the others."""
        others = [n for n in self.nodes if n is not node]
        for other in others:
            self._cookie_for(other, [node], secrets.token_hex(8))
        self._cookie_for(node, others, secrets.token_hex(8), disconnect=True)

    def heal(self, node, timeout=180):
        """Undo :meth:`partition`; returns once every node runs again."""
        others = [n for n in self.nodes if n is not node]
        for other in others:
            self._cookie_for(other, [node], self.cookie)
        self._cookie_for(node, others, self.cookie)
        for other in others:
            node.ctl('eval', "net_kernel:connect_node('%s')." % other.node)
        self.wait_running(self.nodes, timeout)

    def stop(self):
        for node in reversed(self.nodes):
            node.stop()
        self.epmd.stop()
        if self._own_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)
