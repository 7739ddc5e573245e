"""Capacity answers against a brute-force oracle: the real scheduler placing
one instance at a time, claiming in an in-memory placement, until no host
is left."""

import random

from hypothesis import given, settings, HealthCheck
from hypothesis import strategies as st

from nimbus.common import context
from nimbus.common.objects.request_spec import InstanceGroup
from nimbus.scheduler import conf as sconf
from nimbus.scheduler import driver as driver_mod
from nimbus.scheduler import exception
from nimbus.scheduler import host_manager
from nimbus.scheduler import host_source
from nimbus.scheduler import testing


class TinyPlacement:
    """Providers with inventories ``{rc: (total, reserved, ratio)}`` and
    usage; candidates are every provider with room for one instance."""

    def __init__(self, inventories, spec_of):
        self.inv = inventories
        self.used = {u: {} for u in inventories}
        self.spec_of = spec_of

    def capacity(self, uuid, rc):
        total, reserved, ratio = self.inv[uuid][rc]
        return int((total - reserved) * ratio)

    def _wanted(self):
        f = self.spec_of().flavor
        return {
            'VCPU': f.vcpus,
            'MEMORY_MB': f.memory_mb,
            'DISK_GB': f.root_gb,
        }

    def _fits(self, uuid, resources):
        return all(
            self.used[uuid].get(rc, 0) + n <= self.capacity(uuid, rc)
            for rc, n in resources.items()
        )

    def get_allocation_candidates(self, ctxt, params):
        want = self._wanted()
        areqs, summaries = [], {}
        for uuid in self.inv:
            if not self._fits(uuid, want):
                continue
            areqs.append({'allocations': {uuid: {'resources': dict(want)}}})
            summaries[uuid] = {
                'root_provider_uuid': uuid,
                'traits': [],
                'resources': {
                    rc: {
                        'capacity': self.capacity(uuid, rc),
                        'used': self.used[uuid].get(rc, 0),
                    }
                    for rc in self.inv[uuid]
                },
            }
        return {'allocation_requests': areqs, 'provider_summaries': summaries}

    def claim_resources(self, ctxt, uuid, areq, project_id, user_id):
        ((rp, body),) = areq['allocations'].items()
        if not self._fits(rp, body['resources']):
            return False
        for rc, n in body['resources'].items():
            self.used[rp][rc] = self.used[rp].get(rc, 0) + n
        return True

    def remove_allocations(self, ctxt, uuid):
        raise AssertionError('nothing is released in these tests')


def _cloud(seed, n):
    rng = random.Random(seed)
    nodes, services, inventories = [], [], {}
    az_hosts = []
    for i in range(n):
        node = testing.compute_node(
            i,
            rng,
            vcpus=rng.choice([2, 4, 8]),
            memory_mb=rng.choice([2048, 4096, 8192]),
            local_gb=rng.choice([20, 40, 100]),
            cpu_allocation_ratio=rng.choice([1.0, 2.0, 4.0]),
            ram_allocation_ratio=rng.choice([1.0, 1.5]),
            pci_stats=[],
        )
        nodes.append(node)
        services.append(
            {
                'host': node['host'],
                'binary': 'nimbus-compute',
                'disabled': rng.random() < 0.15,
                'up': True,
            }
        )
        if rng.random() < 0.5:
            az_hosts.append(node['host'])
        inventories[node['uuid']] = {
            'VCPU': (
                node['vcpus'],
                rng.choice([0, 1]),
                node['cpu_allocation_ratio'],
            ),
            'MEMORY_MB': (
                node['memory_mb'],
                rng.choice([0, 512]),
                node['ram_allocation_ratio'],
            ),
            'DISK_GB': (node['local_gb'], rng.choice([0, 5]), 1.0),
        }
    aggs = [
        {
            'id': 1,
            'uuid': 'agg-az1',
            'name': 'az1-agg',
            'hosts': az_hosts,
            'metadata': {'availability_zone': 'az1'},
        }
    ]
    return host_source.InMemoryHostInfoSource(
        nodes, services, aggs, {}, []
    ), inventories


def _spec(flavor, az, group, k):
    vcpus, mem, disk = flavor
    spec = testing.spec(
        vcpus=vcpus, memory_mb=mem, root_gb=disk, availability_zone=az
    )
    spec.instance_uuids = ['inst-%d' % k]
    spec.instance_group = group
    return spec


def _build(seed, n, spec_of):
    conf = sconf.make_conf()
    src, inventories = _cloud(seed, n)
    hm = host_manager.HostManager(conf, src)
    hm.refresh()
    placement = TinyPlacement(inventories, spec_of)
    return driver_mod.Scheduler(conf, placement, hm), hm


def oracle(seed, n, flavor, az, policy):
    group = InstanceGroup(uuid='g1', policy=policy) if policy else None
    current = {}
    sched, _hm = _build(seed, n, lambda: current['spec'])
    placed = {}
    ctxt = context.get_admin_context()
    for k in range(10000):
        current['spec'] = spec = _spec(flavor, az, group, k)
        try:
            result = sched.select_destinations(
                ctxt, spec, return_alternates=False
            )
        except exception.NoValidHost:
            break
        host = result[0][0].service_host
        placed[host] = placed.get(host, 0) + 1
    return placed


def answer(seed, n, flavor, az, policy):
    group = InstanceGroup(uuid='g1', policy=policy) if policy else None
    spec = _spec(flavor, az, group, 0)
    sched, _hm = _build(seed, n, lambda: spec)
    return sched.capacity(context.get_admin_context(), spec)


FLAVORS = st.tuples(
    st.sampled_from([1, 2, 3]),
    st.sampled_from([512, 1024, 3000]),
    st.sampled_from([1, 10, 30]),
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 10**6),
    n=st.integers(1, 6),
    flavor=FLAVORS,
    az=st.sampled_from([None, 'az1']),
    policy=st.sampled_from([None, 'anti-affinity']),
)
def test_capacity_matches_brute_force(seed, n, flavor, az, policy):
    expected = oracle(seed, n, flavor, az, policy)
    got = answer(seed, n, flavor, az, policy)
    assert {h['host']: h['fits'] for h in got['hosts']} == expected
    assert got['total'] == sum(expected.values())
    assert sum(got['per_cell'].values()) == got['total']
    assert sum(got['per_availability_zone'].values()) == got['total']


def test_shape_and_limiting_resource():
    got = answer(3, 6, (1, 3000, 1), None, None)
    assert got['hosts']
    for row in got['hosts']:
        counts = row['by_resource_class']
        assert row['fits'] == min(counts.values())
        assert counts[row['limited_by']] == row['fits']
    assert got['runs_out_first'] in ('VCPU', 'MEMORY_MB', 'DISK_GB')
    assert got['per_aggregate'].get('az1-agg', 0) == sum(
        r['fits'] for r in got['hosts'] if 'az1-agg' in r['aggregates']
    )


def test_affinity_is_one_host():
    got = answer(5, 6, (1, 512, 1), None, 'affinity')
    assert got['hosts_with_room'] <= 1


def test_a_busy_example():
    """Not vacuous: the oracle places many instances on several hosts."""
    expected = oracle(1, 6, (1, 512, 1), None, None)
    assert sum(expected.values()) > 10 and len(expected) > 1
    got = answer(1, 6, (1, 512, 1), None, None)
    assert {h['host']: h['fits'] for h in got['hosts']} == expected
