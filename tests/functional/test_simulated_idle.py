"""The periodic resource updates of simulated hosts (issue 27), a slice
at a time. Before each slice one ``instances_on_hosts`` call (cell
conductor RPC 1.15) reads the instances of its hosts, and after it one
``compute_nodes_update`` carries the node records that changed. To a
cell conductor capped below 1.15 one ``hosts_with_records`` check asks
the cell which of its hosts any record names; a host named nowhere and
with no guest reads no instances and no moves. Either way what the cloud
shows stays right."""

import pytest

from nimbus.allinone import client as client_mod
from nimbus.allinone import cloud as cloud_mod
from nimbus.common import context
from nimbus.compute import resource_tracker
from tests.functional import test_simulated_hosts as simulated_hosts


class _Spy:
    """The real cell conductor client, with its reads noted, as capped
    below 1.15 (``batched``: not capped)."""

    def __init__(self, real, batched=False):
        self._real = real
        self.batched = batched
        self.checks = []
        self.reads = []
        self.moves = []
        self.slices = []
        self.nodes = []
        self.node_batches = []

    def __getattr__(self, name):
        return getattr(self._real, name)

    def takes_host_instance_batches(self):
        return self.batched

    def instances_on_hosts(self, ctxt, hosts):
        self.slices.append(list(hosts))
        return self._real.instances_on_hosts(ctxt, hosts)

    def compute_node_update(self, ctxt, node):
        self.nodes.append(node.host)
        return self._real.compute_node_update(ctxt, node)

    def compute_nodes_update(self, ctxt, nodes):
        self.node_batches.append([n.host for n in nodes])
        return self._real.compute_nodes_update(ctxt, nodes)

    def hosts_with_records(self, ctxt, hosts):
        self.checks.append(list(hosts))
        return self._real.hosts_with_records(ctxt, hosts)

    def instances_on_host(self, ctxt, host):
        self.reads.append(host)
        return self._real.instances_on_host(ctxt, host)

    def moves_of_host(self, ctxt, host):
        self.moves.append(host)
        return self._real.moves_of_host(ctxt, host)


def _computes(cloud, count):
    # The test turns the updates by hand.
    return simulated_hosts._computes(
        cloud, count, compute={'update_resources_interval': 3600}
    )


def _update(computes, names):
    """One turn of the periodic update of ``names``, as a wheel slice
    runs it: the check, each host's update, the slice's node records."""
    quiet = computes.before_updates(names)
    for name in names:
        computes.hosts[name]._update_resources()
    computes.after_updates(names)
    return quiet


def _hypervisors(api):
    return {
        h['hypervisor_hostname']: h
        for h in api.get('/os-hypervisors/detail')['hypervisors']
    }


@pytest.mark.slow
def test_quiet_hosts_read_nothing_and_the_cloud_stays_right(make_cloud):
    cloud = make_cloud(hosts=0)
    names = ['sim-%04d' % i for i in range(1, 5)]
    computes = _computes(cloud, 4)
    spy = computes.conductor = _Spy(computes.conductor)
    try:
        assert computes.start() == []
        del spy.checks[:], spy.reads[:], spy.moves[:]
        # Nothing anywhere: one check for the slice, no read of a host.
        assert _update(computes, names) == set(names)
        assert spy.checks == [names]
        assert spy.reads == [] and spy.moves == []

        api = client_mod.ComputeClient(cloud.api_url)
        cloud_mod.wait_for(
            lambda: len(_hypervisors(api)) == 4, what='4 hypervisors'
        )
        flavor = api.create_flavor('m1.tiny', 1, 512, 1)
        image = api.create_image('cirros')
        uuid = api.create_server('vm', flavor['id'], image['id'])['server'][
            'id'
        ]
        server = cloud_mod.wait_for(
            lambda: (lambda s: s if s['status'] == 'ACTIVE' else None)(
                api.server(uuid)
            ),
            what='the server ACTIVE',
        )
        busy = server['OS-EXT-SRV-ATTR:host']
        # A guest: the host reads as always, even when told it is quiet
        # (a build may have landed after the check).
        computes.hosts[busy].expect_quiet()
        del spy.checks[:], spy.reads[:], spy.moves[:]
        computes.hosts[busy]._update_resources()
        # Its guest is its live instance's: no orphan to look for, the
        # moves through it are not read.
        assert spy.reads == [busy] and spy.moves == []
        # The cell names the busy host: only it reads; its node record
        # still counts its server, the others none.
        del spy.checks[:], spy.reads[:], spy.moves[:]
        assert _update(computes, names) == set(names) - {busy}
        assert spy.checks == [names]
        assert spy.reads == [busy] and spy.moves == []
        hypervisors = _hypervisors(api)
        assert hypervisors[busy]['running_vms'] == 1
        assert all(
            hypervisors[n]['running_vms'] == 0 for n in names if n != busy
        )
        # The server deleted: its host is still named (the deleted record
        # stays), reads, and reports no server any more.
        api.delete('/servers/%s' % uuid)
        cloud_mod.wait_for(
            lambda: not computes.hosts[busy].driver.list_instances(),
            what='the guest gone',
        )

        # The guest goes before the instance's record is deleted: the
        # record may still count at the first update after.
        def reported_gone():
            del spy.reads[:]
            _update(computes, names)
            assert spy.reads == [busy]
            return _hypervisors(api)[busy]['running_vms'] == 0

        cloud_mod.wait_for(reported_gone, what='no server on the host')
        # A failed check: every host reads on its own.
        computes.conductor = _Failing(spy)
        del spy.reads[:]
        assert _update(computes, names) == set()
        assert sorted(spy.reads) == names
        # Placement holds every host's tree as before.
        ctxt = context.get_admin_context()
        for name in names:
            root = resource_tracker.compute_node_uuid(name)
            tree = computes.placement.get_provider_tree(ctxt, root)
            assert tree[0]['inventories']['VCPU']['total'] > 0
    finally:
        computes.stop()


class _Failing:
    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)

    def hosts_with_records(self, ctxt, hosts):
        raise RuntimeError('the cell conductor is away')


def _boot(api):
    flavor = api.create_flavor('m1.tiny', 1, 512, 1)
    image = api.create_image('cirros')
    uuid = api.create_server('vm', flavor['id'], image['id'])['server']['id']
    server = cloud_mod.wait_for(
        lambda: (lambda s: s if s['status'] == 'ACTIVE' else None)(
            api.server(uuid)
        ),
        what='the server ACTIVE',
    )
    return uuid, server['OS-EXT-SRV-ATTR:host']


@pytest.mark.slow
def test_a_slice_reads_in_one_call_and_writes_in_one_call(make_cloud):
    cloud = make_cloud(hosts=0)
    names = ['sim-%04d' % i for i in range(1, 5)]
    computes = _computes(cloud, 4)
    spy = computes.conductor = _Spy(computes.conductor, batched=True)
    try:
        assert computes.start() == []
        api = client_mod.ComputeClient(cloud.api_url)
        cloud_mod.wait_for(
            lambda: len(_hypervisors(api)) == 4, what='4 hypervisors'
        )
        uuid, busy = _boot(api)
        # Its record counts the server only after an update; every host's
        # record is due (the refresh interval set aside).
        for name in names:
            computes.hosts[name].tracker._node_sent = None
        del spy.reads[:], spy.checks[:], spy.nodes[:]
        assert _update(computes, names) == set(names)
        # One read for the slice, no host's own, no check; one write.
        assert spy.slices == [names] and spy.reads == [] and spy.checks == []
        assert spy.node_batches == [names] and spy.nodes == []
        hypervisors = _hypervisors(api)
        assert hypervisors[busy]['running_vms'] == 1
        assert all(
            hypervisors[n]['running_vms'] == 0 for n in names if n != busy
        )
        # Unchanged records are not sent again.
        del spy.slices[:], spy.node_batches[:]
        _update(computes, names)
        assert spy.slices == [names] and spy.node_batches == []
        # A guest the slice's read did not name (a build that landed
        # after it) makes its host read the cell itself: no orphan is
        # destroyed for a record the read missed.
        computes.hosts[busy].expect_instances([])
        computes.hosts[busy]._update_resources()
        assert spy.reads == [busy]
        assert computes.hosts[busy].driver.list_instances() == [uuid]
        api.delete('/servers/%s' % uuid)
        cloud_mod.wait_for(
            lambda: not computes.hosts[busy].driver.list_instances(),
            what='the guest gone',
        )

        def reported_gone():
            _update(computes, names)
            return _hypervisors(api)[busy]['running_vms'] == 0

        cloud_mod.wait_for(reported_gone, what='no server on the host')
    finally:
        computes.stop()
