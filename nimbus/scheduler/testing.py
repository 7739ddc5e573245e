"""Test and benchmark helpers (library code so other packages' tests can use them):
synthetic compute nodes, an in-memory host source, placement-shaped candidate responses
and in-memory claims."""

from __future__ import annotations

import random
import threading
import uuid as uuidlib

from nimbus.common.objects.request_spec import RequestSpec
from nimbus.scheduler.host_manager import HostManager
from nimbus.scheduler.host_source import InMemoryHostInfoSource
from nimbus.scheduler.host_state import HostState

CPU_FLAGS = ['aes', 'avx', 'avx2', 'sse4_2', 'mmx', 'fpu', 'vmx', 'pdpe1gb']


def node_uuid(i: int) -> str:
    return str(uuidlib.UUID(int=i + 1))


def compute_node(
    i: int, rng: random.Random | None = None, cell_uuid='cell-1', **kw
) -> dict:
    """A compute node record for host ``host-<i>``; random but reproducible with ``rng``."""
    rng = rng or random.Random(i)
    vcpus = kw.pop('vcpus', rng.choice([16, 32, 48, 64]))
    mem = kw.pop('memory_mb', rng.choice([65536, 131072, 262144]))
    disk = kw.pop('local_gb', rng.choice([500, 1000, 2000]))
    flags = sorted(rng.sample(CPU_FLAGS, rng.randint(3, len(CPU_FLAGS))))
    cn = {
        'uuid': node_uuid(i),
        'host': f'host-{i}',
        'hypervisor_hostname': f'host-{i}',
        'cell_uuid': cell_uuid,
        'vcpus': vcpus,
        'vcpus_used': rng.randint(0, vcpus // 2),
        'memory_mb': mem,
        'memory_mb_used': rng.randint(0, mem // 2),
        'local_gb': disk,
        'local_gb_used': rng.randint(0, disk // 2),
        'cpu_allocation_ratio': 4.0,
        'ram_allocation_ratio': 1.0,
        'disk_allocation_ratio': 1.0,
        'hypervisor_type': 'QEMU',
        'hypervisor_version': rng.choice([6002000, 7000000, 8002000]),
        'cpu_info': {'arch': 'x86_64', 'features': flags, 'vendor': 'Intel'},
        'host_ip': f'10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}',
        'supported_instances': [['x86_64', 'qemu', 'hvm']],
        'num_io_ops': rng.randint(0, 6),
        'failed_builds': 1 if rng.random() < 0.02 else 0,
        'metrics': {'cpu.percent': rng.random() * 100},
        'numa_topology': {
            'cells': [
                {
                    'id': c,
                    'cpuset': list(
                        range(c * vcpus // 2, c * vcpus // 2 + vcpus // 4)
                    ),
                    'pcpuset': list(
                        range(
                            c * vcpus // 2 + vcpus // 4, (c + 1) * vcpus // 2
                        )
                    ),
                    'memory': mem // 2,
                    'cpu_usage': 0,
                    'memory_usage': 0,
                    'pinned_cpus': [],
                }
                for c in range(2)
            ]
        },
        'pci_stats': (
            [
                {
                    'vendor_id': '8086',
                    'product_id': '154d',
                    'dev_type': 'type-PF',
                    'count': rng.randint(1, 4),
                    'numa_node': 0,
                }
            ]
            if rng.random() < 0.1
            else []
        ),
    }
    cn.update(kw)
    return cn


def make_source(
    n: int,
    seed: int = 0,
    cells: int = 1,
    az_every: int = 0,
    disabled_every: int = 0,
) -> InMemoryHostInfoSource:
    rng = random.Random(seed)
    nodes, services, aggs = [], [], []
    for i in range(n):
        nodes.append(compute_node(i, rng, cell_uuid=f'cell-{i % cells + 1}'))
        services.append(
            {
                'host': f'host-{i}',
                'binary': 'nimbus-compute',
                'disabled': bool(disabled_every and i % disabled_every == 0),
                'up': True,
            }
        )
    if az_every:
        aggs.append(
            {
                'id': 1,
                'uuid': 'agg-az1',
                'name': 'az1',
                'hosts': [f'host-{i}' for i in range(0, n, az_every)],
                'metadata': {'availability_zone': 'az1'},
            }
        )
    return InMemoryHostInfoSource(nodes, services, aggs, {}, [])


def candidates_for(states: list[HostState], spec: RequestSpec) -> dict:
    """A GET /allocation_candidates body naming every host that fits one instance."""
    f = spec.flavor
    res = {'VCPU': f.vcpus, 'MEMORY_MB': f.memory_mb}
    disk = (0 if spec.is_bfv else f.root_gb) + f.ephemeral_gb
    if disk:
        res['DISK_GB'] = disk
    areqs, summaries = [], {}
    for h in states:
        vcap = h.vcpus_total * h.cpu_allocation_ratio
        rcap = h.memory_mb * h.ram_allocation_ratio
        dcap = h.local_gb * h.disk_allocation_ratio
        if (
            vcap - h.vcpus_used < f.vcpus
            or rcap - h.memory_mb_used < f.memory_mb
            or dcap - h.local_gb_used < disk
        ):
            continue
        areqs.append(
            {
                'allocations': {h.uuid: {'resources': dict(res)}},
                'mappings': {'': [h.uuid]},
            }
        )
        summaries[h.uuid] = {
            'resources': {
                'VCPU': {'capacity': vcap, 'used': h.vcpus_used},
                'MEMORY_MB': {'capacity': rcap, 'used': h.memory_mb_used},
                'DISK_GB': {'capacity': dcap, 'used': h.local_gb_used},
            },
            'traits': ['COMPUTE_STATUS_ENABLED'],
            'parent_provider_uuid': None,
            'root_provider_uuid': h.uuid,
        }
    return {'allocation_requests': areqs, 'provider_summaries': summaries}


class InMemoryClaims:
    """claim/unclaim callables that track usage per provider and refuse overcommit."""

    def __init__(
        self,
        capacity: dict[str, dict[str, float]] | None = None,
        fail_hosts=(),
    ):
        self.capacity = capacity or {}
        self.used: dict[str, dict[str, float]] = {}
        self.claims: dict = {}
        self.fail_hosts = set(fail_hosts)
        self.lock = threading.Lock()

    def claim(self, host, alloc_req, instance_uuid) -> bool:
        with self.lock:
            return self._claim(host, alloc_req, instance_uuid)

    def _claim(self, host, alloc_req, instance_uuid) -> bool:
        if host.host in self.fail_hosts:
            return False
        allocs = (alloc_req or {}).get('allocations', {})
        for rp, body in allocs.items():
            cap = self.capacity.get(rp)
            used = self.used.setdefault(rp, {})
            for rc, amount in body['resources'].items():
                if cap is not None and used.get(rc, 0) + amount > cap.get(
                    rc, 0
                ):
                    return False
        for rp, body in allocs.items():
            used = self.used.setdefault(rp, {})
            for rc, amount in body['resources'].items():
                used[rc] = used.get(rc, 0) + amount
        self.claims[(instance_uuid, host.host, len(self.claims))] = alloc_req
        return True

    def unclaim(self, host, alloc_req, instance_uuid) -> None:
        with self.lock:
            self._unclaim(host, alloc_req, instance_uuid)

    def _unclaim(self, host, alloc_req, instance_uuid) -> None:
        for rp, body in (alloc_req or {}).get('allocations', {}).items():
            used = self.used.setdefault(rp, {})
            for rc, amount in body['resources'].items():
                used[rc] = used.get(rc, 0) - amount
        for key in [
            k
            for k in self.claims
            if k[0] == instance_uuid and k[1] == host.host
        ]:
            del self.claims[key]


def manager_with(n: int, conf, **kw) -> HostManager:
    hm = HostManager(conf, make_source(n, **kw))
    hm.refresh()
    return hm


def spec(
    vcpus=2,
    memory_mb=4096,
    root_gb=20,
    extra_specs=None,
    image_props=None,
    num=1,
    **kw,
) -> RequestSpec:
    d = {
        'flavor': {
            'name': kw.pop('flavor_name', 'm1.test'),
            'flavorid': 'f1',
            'vcpus': vcpus,
            'memory_mb': memory_mb,
            'root_gb': root_gb,
            'ephemeral_gb': 0,
            'swap': 0,
            'extra_specs': extra_specs or {},
        },
        'image': {
            'id': 'img-1',
            'name': 'img',
            'properties': image_props or {},
        },
        'num_instances': num,
        'instance_uuids': [
            str(uuidlib.UUID(int=10**9 + k)) for k in range(num)
        ],
        'project_id': 'p1',
        'user_id': 'u1',
    }
    d.update(kw)
    return RequestSpec.from_primitive(d)
