import pytest

from nimbus.scheduler import conf as sconf
from nimbus.scheduler.host_state import HostState


@pytest.fixture
def conf():
    return sconf.make_conf()


def host(name='host-1', **kw):
    """A HostState with sensible defaults; keyword args set attributes after the
    compute-node update (aggregates=[...] goes through set_aggregates)."""
    aggs = kw.pop('aggregates', [])
    cn = {
        'uuid': f'uuid-{name}',
        'host': name,
        'hypervisor_hostname': name,
        'cell_uuid': kw.pop('cell_uuid', 'cell-1'),
        'vcpus': kw.pop('vcpus', 16),
        'vcpus_used': kw.pop('vcpus_used', 0),
        'memory_mb': kw.pop('memory_mb', 32768),
        'memory_mb_used': kw.pop('memory_mb_used', 0),
        'local_gb': kw.pop('local_gb', 500),
        'local_gb_used': kw.pop('local_gb_used', 0),
        'cpu_allocation_ratio': 1.0,
        'ram_allocation_ratio': 1.0,
        'disk_allocation_ratio': 1.0,
        'hypervisor_type': 'QEMU',
        'hypervisor_version': 7000000,
        'cpu_info': {'arch': 'x86_64', 'features': ['aes', 'avx', 'mmx']},
        'host_ip': kw.pop('host_ip', '10.0.0.1'),
        'supported_instances': [['x86_64', 'qemu', 'hvm']],
    }
    for k in list(kw):
        if k in (
            'numa_topology',
            'pci_stats',
            'metrics',
            'cpu_allocation_ratio',
            'ram_allocation_ratio',
            'disk_allocation_ratio',
            'hypervisor_version',
            'supported_instances',
            'cpu_info',
        ):
            cn[k] = kw.pop(k)
    hs = HostState(name)
    hs.update_from_compute_node(cn)
    hs.set_aggregates(aggs, 'nova')
    instances = kw.pop('instances', None)
    if instances is not None:
        hs.set_instances([{'uuid': u} for u in instances])
    for k, v in kw.items():
        setattr(hs, k, v)
    hs._recompute()
    return hs
