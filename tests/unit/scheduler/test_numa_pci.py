import json

import pytest

from nimbus.scheduler import numa, selection
from nimbus.scheduler.filters import numa as numa_filter
from nimbus.scheduler.filters import pci
from nimbus.scheduler import testing

from .conftest import host

TOPO = {
    'cells': [
        {
            'id': 0,
            'cpuset': [0, 1, 2, 3],
            'pcpuset': [4, 5, 6, 7],
            'memory': 8192,
        },
        {
            'id': 1,
            'cpuset': [8, 9, 10, 11],
            'pcpuset': [12, 13, 14],
            'memory': 8192,
        },
    ]
}


def test_instance_topology_from_flavor_and_image():
    assert numa.instance_topology(testing.spec()) is None
    t = numa.instance_topology(
        testing.spec(
            vcpus=4, memory_mb=2048, extra_specs={'hw:numa_nodes': '2'}
        )
    )
    assert [(c.cpus, c.memory) for c in t.cells] == [(2, 1024), (2, 1024)]
    t = numa.instance_topology(
        testing.spec(
            vcpus=3,
            memory_mb=3072,
            extra_specs={
                'hw:numa_nodes': '2',
                'hw:numa_cpus.0': '0',
                'hw:numa_cpus.1': '1-2',
                'hw:numa_mem.0': '1024',
                'hw:numa_mem.1': '2048',
            },
        )
    )
    assert [(c.cpus, c.memory) for c in t.cells] == [(1, 1024), (2, 2048)]
    t = numa.instance_topology(
        testing.spec(image_props={'hw_cpu_policy': 'dedicated'})
    )
    assert len(t.cells) == 1 and t.dedicated
    with pytest.raises(numa.InvalidNUMARequest):
        numa.instance_topology(
            testing.spec(vcpus=3, extra_specs={'hw:numa_nodes': '2'})
        )


def test_numa_filter_pinned_cells(conf):
    F = numa_filter.NUMATopologyFilter(conf)
    s = testing.spec(
        vcpus=8,
        memory_mb=4096,
        extra_specs={'hw:numa_nodes': '2', 'hw:cpu_policy': 'dedicated'},
    )
    h = host(numa_topology=TOPO)  # cell 1 has only 3 pinnable CPUs
    assert F.is_enabled_for(s)
    assert not F.host_passes(h, s)
    assert (
        F.reject_reason(h, s)
        == 'needs 2 cells of 4 pinned CPUs, host cells have 4, 3 free'
    )
    s6 = testing.spec(
        vcpus=6,
        memory_mb=4096,
        extra_specs={'hw:numa_nodes': '2', 'hw:cpu_policy': 'dedicated'},
    )
    assert F.host_passes(h, s6)
    assert not F.host_passes(host(), s6)  # no NUMA topology
    assert F.reject_reason(host(), s6) == 'host has no NUMA topology'


def test_numa_shared_ratio_and_consume(conf):
    F = numa_filter.NUMATopologyFilter(conf)
    s = testing.spec(
        vcpus=8, memory_mb=4096, extra_specs={'hw:numa_nodes': '1'}
    )
    h = host(numa_topology=TOPO)
    assert not F.host_passes(h, s)  # 8 vCPUs > 4 CPUs of a cell
    s4 = testing.spec(
        vcpus=4, memory_mb=4096, extra_specs={'hw:numa_nodes': '1'}
    )
    assert F.host_passes(h, s4)
    selection.consume(h, s4, conf, 'i1')
    selection.consume(h, s4, conf, 'i2')
    assert not F.host_passes(h, s4)  # both cells' CPUs used at ratio 1.0
    h2 = host(
        numa_topology=TOPO, cpu_allocation_ratio=2.0, ram_allocation_ratio=2.0
    )
    for k in range(4):
        assert F.host_passes(h2, s4)
        selection.consume(h2, s4, conf, f'i{k}')
    assert not F.host_passes(h2, s4)


def test_numa_pinning_consumes_cpus(conf):
    F = numa_filter.NUMATopologyFilter(conf)
    s = testing.spec(
        vcpus=3, memory_mb=1024, extra_specs={'hw:cpu_policy': 'dedicated'}
    )
    h = host(numa_topology=TOPO)
    selection.consume(h, s, conf, 'a')
    selection.consume(h, s, conf, 'b')
    assert h.numa_cells[0].pinned_cpus == {4, 5, 6} and h.numa_cells[
        1
    ].pinned_cpus == {12, 13, 14}
    assert not F.host_passes(h, s)


ALIAS = json.dumps(
    {
        'name': 'nic',
        'vendor_id': '8086',
        'product_id': '154d',
        'device_type': 'type-PF',
    }
)


def test_pci_aliases_and_plan():
    aliases = pci.parse_aliases([ALIAS])
    reqs = pci.parse_requests('nic:2', aliases)
    pools = [
        {
            'vendor_id': '8086',
            'product_id': '154d',
            'dev_type': 'type-PF',
            'count': 1,
        },
        {
            'vendor_id': '8086',
            'product_id': '154d',
            'dev_type': 'type-PF',
            'count': 1,
        },
    ]
    assert pci.plan(pools, reqs) == [(0, 1), (1, 1)]
    assert pci.plan(pools[:1], reqs) is None
    with pytest.raises(pci.InvalidPciAlias):
        pci.parse_requests('gpu:1', aliases)


def test_pci_filter(conf):
    conf.set_override('alias', [ALIAS], 'pci')
    F = pci.PciPassthroughFilter(conf)
    s = testing.spec(extra_specs={'pci_passthrough:alias': 'nic:2'})
    pools = [
        {
            'vendor_id': '8086',
            'product_id': '154d',
            'dev_type': 'type-PF',
            'count': 2,
        }
    ]
    h = host(pci_stats=pools)
    assert F.host_passes(h, s)
    assert not F.host_passes(host(), s)
    assert 'needs 2x nic' in F.reject_reason(host(), s)
    selection.consume(h, s, conf, 'i1')
    assert h.pci_pools[0]['count'] == 0 and not F.host_passes(h, s)
    assert not F.host_passes(
        h, testing.spec(extra_specs={'pci_passthrough:alias': 'bad'})
    )
    assert not F.is_enabled_for(testing.spec())
