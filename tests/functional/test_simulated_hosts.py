"""Many simulated compute hosts in one process (in-process bus, SQLite):
each has its service and compute node records and its provider tree, and
builds land on them, all on one RPC server and one worker pool."""

import threading

import pytest

from nimbus import services
from nimbus.allinone import client as client_mod
from nimbus.allinone import cloud as cloud_mod
from nimbus.common import config
from nimbus.common import context
from nimbus.compute import resource_tracker


def _computes(cloud, count, compute=None, placement_app=None, **fake):
    """``count`` simulated hosts on ``cloud``; ``compute``: options of the
    ``[compute]`` group, ``fake``: of ``[fake_driver]``;
    ``placement_app``: the cloud's placement app, reached in process (and
    its bulk writer of new trees used), as the all-in-one does."""
    conf = config.build_conf(
        [],
        overrides={
            'DEFAULT': {
                'host': 'sim',
                'state_path': cloud.state_dir,
                'report_interval': 1,
            },
            'rpc': {'transport_url': cloud.cell_transport_url},
            'placement_client': {'endpoint': cloud.placement_url},
            'fake_driver': fake,
            'compute': compute or {},
            'simulated_hosts': {'workers': 8, 'start_concurrency': 4},
        },
    )
    cloud.confs.append(conf)
    return services.simulated_computes(
        conf, count, placement_app=placement_app
    )


@pytest.mark.slow
def test_simulated_hosts_report_and_take_builds(make_cloud):
    cloud = make_cloud(hosts=0)
    computes = _computes(
        cloud,
        12,
        vcpus=8,
        vcpus_max=64,
        memory_mb=8192,
        memory_mb_max=65536,
        spread_seed=7,
    )
    try:
        assert computes.start() == []
        names = ['sim-%04d' % i for i in range(1, 13)]
        assert sorted(computes.hosts) == names
        ctxt = context.get_admin_context()
        sizes = set()
        for name in names:
            root = resource_tracker.compute_node_uuid(name)
            inventory = computes.placement.get_provider_tree(ctxt, root)[0][
                'inventories'
            ]
            assert 8 <= inventory['VCPU']['total'] <= 64
            sizes.add(
                (inventory['VCPU']['total'], inventory['MEMORY_MB']['total'])
            )
        assert len(sizes) > 1  # the seeded spread
        api = client_mod.ComputeClient(cloud.api_url)
        cloud_mod.wait_for(
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
                == 12
            ),
            what='12 hypervisors up',
        )
        flavor = api.create_flavor('m1.tiny', 1, 512, 1)
        image = api.create_image('cirros')
        ids = [
            api.create_server('vm-%d' % i, flavor['id'], image['id'])[
                'server'
            ]['id']
            for i in range(12)
        ]
        servers = cloud_mod.wait_for(
            lambda: (
                lambda s: (
                    s if all(s[i]['status'] == 'ACTIVE' for i in ids) else None
                )
            )({x['id']: x for x in api.servers()}),
            what='servers ACTIVE',
        )
        hosts = {servers[i]['OS-EXT-SRV-ATTR:host'] for i in ids}
        assert len(hosts) > 1 and hosts <= set(names)
        # One RPC server for every host.
        assert computes.group.rpc.servers == set(names)
        # A killed host's messages wait; restarted, it serves again.
        computes.kill_host('sim-0001')
        assert 'sim-0001' not in computes.group.rpc.servers
        computes.start_host('sim-0001')
        assert 'sim-0001' in computes.group.rpc.servers
    finally:
        computes.stop()


def test_thread_count_does_not_grow_with_hosts(make_cloud):
    # The cell conductor runs in this process too: bound its RPC pool so
    # what is counted is the computes' threads.
    cloud = make_cloud(
        hosts=0, overrides={'DEFAULT': {'executor_thread_pool_size': 4}}
    )
    counts = {}
    for count in (5, 40):
        before = threading.active_count()
        computes = _computes(cloud, count)
        computes.start()
        counts[count] = threading.active_count() - before
        computes.stop()
    # The pool (8) + the RPC executor (8) + ticker + RPC poller (+ the
    # cell conductor's 4), whatever N is.
    assert counts[40] <= 8 + 8 + 2 + 4, counts


def test_a_compute_creates_the_custom_resource_classes_it_reports(make_cloud):
    # A fresh placement knows no CUSTOM_PGPU: the compute creates it.
    cloud = make_cloud(
        hosts=1, host_overrides={'host-1': {'fake_driver': {'pgpus': 2}}}
    )
    ctxt = context.get_admin_context()
    placement = cloud.computes['host-1'].placement
    root = resource_tracker.compute_node_uuid('host-1')
    tree = placement.get_provider_tree(ctxt, root)
    assert len(tree) == 3
    assert sorted(rc for p in tree for rc in p['inventories']) == [
        'CUSTOM_PGPU',
        'CUSTOM_PGPU',
        'DISK_GB',
        'MEMORY_MB',
        'VCPU',
    ]
    names = {
        rc['name']
        for rc in placement.request(ctxt, 'GET', '/resource_classes').json()[
            'resource_classes'
        ]
    }
    assert 'CUSTOM_PGPU' in names


class _Requests:
    """A placement client's requests, noted as (method, path)."""

    def __init__(self, client):
        self.calls = []
        real = client.request

        def request(ctxt, method, path, *args, **kwargs):
            self.calls.append((method, path))
            return real(ctxt, method, path, *args, **kwargs)

        client.request = request


def test_new_hosts_write_their_trees_in_one_write(make_cloud):
    """Hosts whose root provider does not exist have their trees
    written together before they start: no provider request per host.
    Placement then holds what each host's own requests write, and the
    hosts' copies are placement's (an update writes nothing, a refresh
    reads nothing more). Their node records go in one call too, and
    show in the API as a host's own."""
    cloud = make_cloud(hosts=1)
    ctxt = context.get_admin_context()
    alone = cloud.computes['host-1'].placement
    expected = alone.get_provider_tree(
        ctxt, resource_tracker.compute_node_uuid('host-1')
    )
    computes = _computes(cloud, 4, placement_app=cloud.placement_app)
    writes = []
    bulk = computes.trees

    def trees(providers):
        providers = list(providers)
        writes.append(providers)
        return bulk(providers)

    computes.trees = trees
    sent = _Requests(computes.placement)
    spy = computes.conductor = _Spy(computes.conductor)
    try:
        assert computes.start() == []
        assert [len(w) for w in writes] == [4]
        names = ['sim-%04d' % i for i in range(1, 5)]
        assert spy.node_batches == [names] and spy.nodes == []
        api = client_mod.ComputeClient(cloud.api_url)
        nodes = {
            h['hypervisor_hostname']: h
            for h in api.get('/os-hypervisors/detail')['hypervisors']
        }
        for name in names:
            assert nodes[name]['vcpus'] == nodes['host-1']['vcpus']
            assert nodes[name]['memory_mb'] == nodes['host-1']['memory_mb']
        assert not [
            c for c in sent.calls if c[1].startswith('/resource_providers')
        ][1:], sent.calls  # only the listing of the roots
        for host in computes.hosts.values():
            tree = alone.get_provider_tree(ctxt, host.tracker.node_uuid)
            assert [
                (p['generation'], p['inventories'], sorted(p['traits']))
                for p in tree
            ] == [
                (p['generation'], p['inventories'], sorted(p['traits']))
                for p in expected
            ]
            copy = {
                p.uuid: p.generation for p in host.tracker._tree.providers()
            }
            assert copy == {p['uuid']: p['generation'] for p in tree}
        sent.calls.clear()
        host = computes.hosts['sim-0001']
        host.tracker.update(ctxt)
        assert sent.calls == []
        # At its refresh the one listing shows the tree as written.
        host.tracker._tree_read_at = None
        host.tracker.update(ctxt)
        assert [method for method, _path in sent.calls] == ['GET']
    finally:
        computes.stop()


@pytest.mark.slow
def test_all_in_one_runs_its_computes_as_shared_simulated_hosts(make_cloud):
    cloud = make_cloud(hosts=6, shared_hosts=True, fail_hosts=['host-1'])
    assert sorted(cloud.computes) == ['host-%d' % i for i in range(1, 7)]
    assert cloud._group.group.rpc.servers == set(cloud.computes)
    assert cloud.computes['host-1'].driver.opts.fail_builds
    assert not cloud.computes['host-2'].driver.opts.fail_builds
    api = client_mod.ComputeClient(cloud.api_url)
    flavor = api.create_flavor('m1.tiny', 1, 512, 1)
    image = api.create_image('cirros')
    cloud.kill_compute('host-6')
    assert 'host-6' not in cloud.computes
    cloud.start_compute('host-6')
    ids = [
        api.create_server('vm-%d' % i, flavor['id'], image['id'])['server'][
            'id'
        ]
        for i in range(10)
    ]
    servers = cloud_mod.wait_for(
        lambda: (
            lambda s: (
                s if all(s[i]['status'] == 'ACTIVE' for i in ids) else None
            )
        )({x['id']: x for x in api.servers()}),
        what='servers ACTIVE',
    )
    assert not {servers[i]['OS-EXT-SRV-ATTR:host'] for i in ids} & {'host-1'}
    cloud.stop_compute('host-2')
    assert 'host-2' not in cloud._group.group.rpc.servers


class _Spy:
    """The real cell conductor client, with its heartbeat calls noted."""

    def __init__(self, real):
        self._real = real
        self.single = []
        self.batches = []
        self.checks = []
        self.reads = []
        self.nodes = []
        self.node_batches = []

    def __getattr__(self, name):
        return getattr(self._real, name)

    def service_heartbeat(self, ctxt, host, binary, **kwargs):
        self.single.append(host)
        return self._real.service_heartbeat(ctxt, host, binary, **kwargs)

    def service_heartbeats(self, ctxt, binary, hosts, **kwargs):
        self.batches.append(list(hosts))
        return self._real.service_heartbeats(ctxt, binary, hosts, **kwargs)

    def hosts_with_records(self, ctxt, hosts):
        self.checks.append(list(hosts))
        return self._real.hosts_with_records(ctxt, hosts)

    def instances_on_host(self, ctxt, host):
        self.reads.append(host)
        return self._real.instances_on_host(ctxt, host)

    def compute_node_update(self, ctxt, node, **kwargs):
        self.nodes.append(node.host)
        return self._real.compute_node_update(ctxt, node, **kwargs)

    def compute_nodes_update(self, ctxt, nodes, **kwargs):
        self.node_batches.append([n.host for n in nodes])
        return self._real.compute_nodes_update(ctxt, nodes, **kwargs)


def _states(api):
    return {
        s['host']: s['state']
        for s in api.get('/os-services')['services']
        if s['binary'] == 'nova-compute'
    }


@pytest.mark.slow
def test_one_batched_heartbeat_keeps_every_host_up(make_cloud):
    cloud = make_cloud(
        hosts=0, overrides={'DEFAULT': {'service_down_time': 4}}
    )
    computes = _computes(cloud, 4)
    spy = computes.conductor = _Spy(computes.conductor)
    names = ['sim-%04d' % i for i in range(1, 5)]
    try:
        assert computes.start() == []
        # The hosts' first heartbeat goes in one batch before they start,
        # then only in batches; one check tells that the cell has no
        # record naming them, so none reads its instances to recover.
        assert spy.single == []
        assert spy.batches[0] == names
        assert spy.checks == [names]
        assert spy.reads == []
        assert all(
            not t[1].__name__ == 'heartbeat'
            for host in computes.hosts.values()
            for t in host.periodic_tasks()
        )
        api = client_mod.ComputeClient(cloud.api_url)
        cloud_mod.wait_for(
            lambda: (
                len(spy.batches) >= 3
                and _states(api) == dict.fromkeys(names, 'up')
            ),
            what='three batches, every host up',
        )
        assert spy.batches[-1] == names
        assert spy.single == []  # no heartbeat of its own
        # A killed host is left out of the batches and goes down after
        # service_down_time; the others stay up.
        computes.kill_host('sim-0001')
        seen = len(spy.batches)
        cloud_mod.wait_for(
            lambda: (
                _states(api)
                == dict(dict.fromkeys(names, 'up'), **{'sim-0001': 'down'})
            ),
            what='sim-0001 down, the others up',
        )
        assert all('sim-0001' not in b for b in spy.batches[seen + 1 :])
        assert spy.batches[-1] == names[1:]
    finally:
        computes.stop()


@pytest.mark.slow
def test_only_hosts_the_cell_names_read_their_recovery(make_cloud):
    cloud = make_cloud(hosts=0)
    names = ['sim-%04d' % i for i in range(1, 5)]
    computes = _computes(cloud, 4)
    try:
        assert computes.start() == []
        api = client_mod.ComputeClient(cloud.api_url)
        cloud_mod.wait_for(
            lambda: _states(api) == dict.fromkeys(names, 'up'),
            what='4 hosts up',
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
    finally:
        computes.stop()
    # The process starts again: one check, and only the host the cell
    # places a server on reads its instances (and finds the server).
    again = _computes(cloud, 4)
    spy = again.conductor = _Spy(again.conductor)
    try:
        assert again.start() == []
        assert spy.checks == [names]
        assert spy.reads == [server['OS-EXT-SRV-ATTR:host']]
        assert sorted(again.hosts) == names
    finally:
        again.stop()
