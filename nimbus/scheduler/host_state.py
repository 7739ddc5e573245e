"""HostState: the scheduler's in-memory view of one compute node.

Built from three sources and kept up to date by events (see ``host_manager.py``):

* the compute node record (hypervisor facts, NUMA cells, PCI pools, metrics, ratios),
* the service record (up / disabled),
* aggregates (metadata, availability zone), instances and server groups on the host,

and, per request, from placement's provider summary (capacity and usage win over the
compute node's own figures, since placement is the arbiter of claims).

Attribute names follow Nova's so that JsonFilter queries and ``capabilities:`` extra specs
written for Nova work unchanged (``free_ram_mb``, ``free_disk_mb``, ``vcpus_total``,
``vcpus_used``, ``num_instances``, ``num_io_ops``, ``hypervisor_type``, ...).
"""

from __future__ import annotations

import json
from typing import Any

from nimbus.scheduler import host_table
from nimbus.scheduler import numa as numa_mod


def _maybe_json(value, default):
    if value is None:
        return default
    if isinstance(value, (str, bytes)):
        try:
            return json.loads(value)
        except ValueError:
            return default
    return value


def _version_int(value) -> int:
    """'2.12.0' -> 2012000, ints unchanged (Nova's hypervisor_version encoding)."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        parts = [int(p) for p in str(value).split('.') if p.isdigit()][:3]
        parts += [0] * (3 - len(parts))
        return parts[0] * 1000000 + parts[1] * 1000 + parts[2]


class HostState(host_table.TableRow):
    """Mutable per-host facts. Filters and weighers only read it; the selection loop
    calls :meth:`consume_from_request` after a claim. Its row in the host manager's
    HostTable, the attributes written through to it and :attr:`STATIC_FACTS` are
    :class:`~nimbus.scheduler.host_table.TableRow`'s."""

    __slots__ = (
        'host',
        'nodename',
        'uuid',
        '_cell_uuid',
        'vcpus_total',
        'vcpus_used',
        'memory_mb',
        'memory_mb_used',
        'local_gb',
        'local_gb_used',
        'cpu_allocation_ratio',
        'ram_allocation_ratio',
        'disk_allocation_ratio',
        'vcpu_capacity',
        'ram_capacity_mb',
        'disk_capacity_gb',
        '_free_vcpus',
        '_free_ram_mb',
        '_free_disk_mb',
        'total_usable_ram_mb',
        'total_usable_disk_gb',
        'disk_mb_used',
        'traits',
        'aggregates',
        '_aggregate_metadata',
        '_availability_zone',
        'instances',
        '_num_instances',
        '_num_io_ops',
        'metrics',
        'numa_cells',
        '_pci_pools',
        '_failed_builds',
        '_service_up',
        '_service_disabled',
        'disabled_reason',
        'hypervisor_type',
        '_hypervisor_version',
        'hypervisor_hostname',
        'cpu_info',
        'host_ip',
        'supported_instances',
        'stats',
        'updated',
        'limits',
        'extra',
        'resources',
        '_agg_min_cache',
        '_static_memo',
        '_summary_seen',
        '_compact_seen',
    )

    # The attributes' public names (JsonFilter and capabilities read them).
    ATTRIBUTES = frozenset(host_table.TRACKED) | frozenset(
        n for n in __slots__ if n[1:] not in host_table.TRACKED
    )

    def __init__(
        self,
        host: str,
        nodename: str | None = None,
        uuid: str | None = None,
        cell_uuid: str | None = None,
    ):
        self._table = None  # the HostTable holding this host's row, if any
        self._slot = -1
        self.host = host
        self.nodename = nodename or host
        self.uuid = uuid
        self.cell_uuid = cell_uuid
        self.vcpus_total = 0
        self.vcpus_used = 0
        self.memory_mb = 0
        self.memory_mb_used = 0
        self.local_gb = 0
        self.local_gb_used = 0
        self.cpu_allocation_ratio = 1.0
        self.ram_allocation_ratio = 1.0
        self.disk_allocation_ratio = 1.0
        self.vcpu_capacity = None
        self.ram_capacity_mb = None
        self.disk_capacity_gb = None
        self.traits: frozenset = frozenset()
        self.aggregates: list[dict] = []
        self.aggregate_metadata: dict[str, set] = {}
        self.availability_zone: str | None = None
        self.instances: dict[str, dict] = {}
        self.num_instances = 0
        self.num_io_ops = 0
        self.metrics: dict[str, float] = {}
        self.numa_cells: list = []
        self.pci_pools: list[dict] = []
        self.failed_builds = 0
        self.service_up = True
        self.service_disabled = False
        self.disabled_reason = None
        self.hypervisor_type = None
        self.hypervisor_version = 0
        self.hypervisor_hostname = self.nodename
        self.cpu_info: dict = {}
        self.host_ip = None
        self.supported_instances: list = []
        self.stats: dict = {}
        self.updated = None
        self.limits: dict = {}
        self.extra: dict = {}
        self.resources: dict = {}
        self._agg_min_cache: dict = {}
        self.static_memo: dict = {}
        # The last provider summary applied, as (resources, traits): the
        # same summary again changes nothing and is skipped. Anything
        # that moves the usage or capacity by another way forgets it.
        self._summary_seen = None
        self._compact_seen = None
        self._recompute()

    def __repr__(self):
        return (
            f'HostState({self.host!r}, {self.nodename!r}, free_ram_mb={self.free_ram_mb}, '
            f'free_disk_mb={self.free_disk_mb}, free_vcpus={self.free_vcpus})'
        )

    # ------------------------------------------------------------------ derived
    def _recompute(self) -> None:
        vcap = (
            self.vcpu_capacity
            if self.vcpu_capacity is not None
            else self.vcpus_total * self.cpu_allocation_ratio
        )
        rcap = (
            self.ram_capacity_mb
            if self.ram_capacity_mb is not None
            else self.memory_mb * self.ram_allocation_ratio
        )
        dcap = (
            self.disk_capacity_gb
            if self.disk_capacity_gb is not None
            else self.local_gb * self.disk_allocation_ratio
        )
        self.free_vcpus = vcap - self.vcpus_used
        self.free_ram_mb = rcap - self.memory_mb_used
        self.free_disk_mb = (dcap - self.local_gb_used) * 1024
        self.total_usable_ram_mb = self.memory_mb
        self.total_usable_disk_gb = self.local_gb
        self.disk_mb_used = self.local_gb_used * 1024
        # PCI pools change in place (consumption, restore): recount them.
        self._recount_pci()

    # ------------------------------------------------------------------ updates
    def update_from_compute_node(self, cn: dict) -> None:
        """Apply a compute node record (see ``HostInfoSource.compute_nodes``)."""
        self.static_memo = {}
        self._seen_summary(None)
        g = cn.get
        self.uuid = g('uuid', self.uuid)
        self.nodename = (
            g('hypervisor_hostname') or g('nodename') or self.nodename
        )
        self.hypervisor_hostname = self.nodename
        self.cell_uuid = g('cell_uuid', self.cell_uuid)
        self.vcpus_total = int(g('vcpus', self.vcpus_total) or 0)
        self.vcpus_used = int(g('vcpus_used', self.vcpus_used) or 0)
        self.memory_mb = int(g('memory_mb', self.memory_mb) or 0)
        self.memory_mb_used = int(
            g('memory_mb_used', self.memory_mb_used) or 0
        )
        self.local_gb = int(g('local_gb', self.local_gb) or 0)
        self.local_gb_used = int(g('local_gb_used', self.local_gb_used) or 0)
        for attr in (
            'cpu_allocation_ratio',
            'ram_allocation_ratio',
            'disk_allocation_ratio',
        ):
            if g(attr) is not None:
                setattr(self, attr, float(g(attr)))
        self.hypervisor_type = g('hypervisor_type', self.hypervisor_type)
        self.hypervisor_version = _version_int(
            g('hypervisor_version', self.hypervisor_version)
        )
        self.cpu_info = _maybe_json(g('cpu_info'), self.cpu_info) or {}
        self.host_ip = g('host_ip', self.host_ip)
        self.supported_instances = [
            tuple(x)
            for x in _maybe_json(
                g('supported_instances'), self.supported_instances
            )
            or []
        ]
        self.stats = _maybe_json(g('stats'), self.stats) or {}
        self.num_io_ops = int(
            g('num_io_ops', self.stats.get('io_workload', self.num_io_ops))
        )
        self.failed_builds = int(
            g(
                'failed_builds',
                self.stats.get('failed_builds', self.failed_builds),
            )
        )
        metrics = _maybe_json(g('metrics'), None)
        if isinstance(metrics, list):
            metrics = {m['name']: m['value'] for m in metrics}
        if metrics is not None:
            self.metrics = dict(metrics)
        numa = _maybe_json(g('numa_topology'), None)
        if numa is not None:
            self.numa_cells = numa_mod.host_cells_from_dict(numa)
        pci = _maybe_json(
            g('pci_stats') if 'pci_stats' in cn else g('pci_pools'), None
        )
        if pci is not None:
            pools = pci.get('pools', []) if isinstance(pci, dict) else pci
            self.pci_pools = [dict(p) for p in pools]
        self.updated = g('updated_at', self.updated)
        self._recompute()

    def update_from_service(self, svc: dict) -> None:
        up = svc.get('up')
        if up is None:
            up = not svc.get('forced_down', False)
        self.service_up = bool(up) and not svc.get('forced_down', False)
        self.service_disabled = bool(svc.get('disabled', False))
        self.disabled_reason = svc.get('disabled_reason')

    def update_from_provider_summary(self, summary: dict) -> None:
        """Placement's view (capacity = (total - reserved) * ratio) wins over
        the node's. Most hosts' summaries are the same from one request to
        the next (one host changes per claim): comparing two small dicts
        costs less than applying one, so an unchanged summary is skipped,
        at once when it is the very summary applied last (an in-process
        placement hands out the same one until usage moves; summaries are
        never modified)."""
        seen = self._summary_seen
        if seen is not None and seen[2] is summary:
            return
        res = summary.get('resources', {})
        traits = summary.get('traits')
        if seen is not None and seen[0] == res and seen[1] == traits:
            self._seen_summary((res, traits, summary))
            return
        self._seen_summary((res, traits, summary))
        self.resources = res
        if 'VCPU' in res:
            self.vcpu_capacity = res['VCPU']['capacity']
            self.vcpus_used = res['VCPU']['used']
        if 'MEMORY_MB' in res:
            self.ram_capacity_mb = res['MEMORY_MB']['capacity']
            self.memory_mb_used = res['MEMORY_MB']['used']
        if 'DISK_GB' in res:
            self.disk_capacity_gb = res['DISK_GB']['capacity']
            self.local_gb_used = res['DISK_GB']['used']
        if 'traits' in summary:
            self.traits = frozenset(summary['traits'])
        self._recompute()

    def _seen_summary(self, seen) -> None:
        """Set ``_summary_seen``, and tell the host's table that this host
        is no longer as the last compact answer left it (see
        ``HostTable.touched``)."""
        self._summary_seen = seen
        table = self._table
        if table is not None:
            table.touched.add(self)

    def update_from_compact(self, summaries, rp) -> None:
        """:meth:`update_from_provider_summary` from a compact answer's
        summaries (``compact_candidates.Summaries``): skipped without
        building the summary when its key equals the one applied last and
        nothing has touched the figures since (every change of them
        clears ``_summary_seen``); otherwise applied as usual."""
        key = summaries.key(rp)
        seen = self._compact_seen
        if seen is not None and seen[0] == key:
            last = self._summary_seen
            if last is not None and last[2] is seen[1]:
                return
        summary = summaries[rp]
        self.update_from_provider_summary(summary)
        self._compact_seen = (key, summary)

    def set_aggregates(
        self, aggregates: list[dict], default_az: str | None = None
    ) -> None:
        self.aggregates = list(aggregates)
        meta: dict[str, set] = {}
        zones = []
        for agg in self.aggregates:
            for k, v in (agg.get('metadata') or {}).items():
                meta.setdefault(k, set()).add(v)
                if k == 'availability_zone':
                    zones.append(v)
        self.aggregate_metadata = meta
        self.availability_zone = (
            ','.join(sorted(set(zones))) if zones else default_az
        )
        self._agg_min_cache = {}

    def aggregate_min(self, key: str, default):
        """Minimum numeric value of aggregate metadata ``key`` over this host's aggregates,
        or ``default`` when no aggregate sets it (or none parses as a number)."""
        cache = self._agg_min_cache
        if key in cache:
            found = cache[key]
            return default if found is None else found
        values = self.aggregate_metadata.get(key)
        found = None
        if values:
            nums = []
            for v in values:
                try:
                    nums.append(float(v))
                except (TypeError, ValueError):
                    pass
            found = min(nums) if nums else None
        cache[key] = found
        return default if found is None else found

    def set_instances(self, instances: list[dict]) -> None:
        self.instances = {i['uuid']: i for i in instances}
        self.num_instances = len(self.instances)

    def add_instance(self, inst: dict) -> None:
        if inst['uuid'] not in self.instances:
            self.num_instances += 1
        self.instances[inst['uuid']] = inst

    def remove_instance(self, uuid: str) -> None:
        if self.instances.pop(uuid, None) is not None:
            self.num_instances -= 1

    # ------------------------------------------------------------------ consumption
    def fits(self, vcpus: int, ram_mb: int, disk_gb: int) -> bool:
        """Does placement's capacity still hold one more instance of this size?"""
        if vcpus and self.free_vcpus < vcpus:
            return False
        if ram_mb and self.free_ram_mb < ram_mb:
            return False
        if disk_gb and self.free_disk_mb < disk_gb * 1024:
            return False
        return True

    def consume_from_request(
        self,
        spec,
        instance_uuid: str | None = None,
        numa_fit=None,
        pci_take=None,
        resources=None,
    ) -> None:
        """One instance of ``spec`` lands here. ``resources`` is what it takes in this
        host's provider tree ({"VCPU", "MEMORY_MB", "DISK_GB"}, see consumption.py);
        None means the flavor's vCPUs, RAM and disk."""
        flavor = spec.flavor
        self._seen_summary(None)
        if resources is None:
            self.vcpus_used += flavor.vcpus
            self.memory_mb_used += flavor.memory_mb
            if not spec.is_bfv:
                self.local_gb_used += (
                    flavor.root_gb
                    + flavor.ephemeral_gb
                    + (flavor.swap + 1023) // 1024
                )
        else:
            self.vcpus_used += resources.get('VCPU', 0)
            self.memory_mb_used += resources.get('MEMORY_MB', 0)
            self.local_gb_used += resources.get('DISK_GB', 0)
        self.num_io_ops += 1
        uuid = instance_uuid or f'pending-{self.num_instances}'
        group = (
            spec.instance_group.uuid
            if spec.instance_group is not None
            else None
        )
        image = spec.image
        self.add_instance(
            {
                'uuid': uuid,
                'flavor_id': flavor.flavorid,
                'group_uuid': group,
                'image_ref': image.id if image is not None else None,
                'image_properties': image.properties
                if image is not None
                else {},
            }
        )
        if numa_fit is not None:
            numa_mod.apply_fit(self.numa_cells, numa_fit)
        if pci_take:
            for idx, count in pci_take:
                self.pci_pools[idx]['count'] -= count
        self._recompute()

    _SNAP = (
        'vcpus_used',
        'memory_mb_used',
        'local_gb_used',
        'num_io_ops',
        'num_instances',
    )

    def snapshot(self):
        """State that :meth:`consume_from_request` changes, for :meth:`restore`."""
        return (
            [getattr(self, a) for a in self._SNAP],
            dict(self.instances),
            [
                (c.cpu_usage, c.memory_usage, set(c.pinned_cpus))
                for c in self.numa_cells
            ],
            [dict(p) for p in self.pci_pools],
        )

    def restore(self, snap) -> None:
        values, instances, cells, pools = snap
        for a, v in zip(self._SNAP, values, strict=False):
            setattr(self, a, v)
        self.instances = instances
        for c, (cu, mu, pins) in zip(self.numa_cells, cells, strict=False):
            c.cpu_usage, c.memory_usage, c.pinned_cpus = cu, mu, pins
        self.pci_pools = pools
        self._seen_summary(None)
        self._recompute()

    # ------------------------------------------------------------------ misc
    def to_dict(self) -> dict[str, Any]:
        return {
            'host': self.host,
            'nodename': self.nodename,
            'uuid': self.uuid,
            'cell_uuid': self.cell_uuid,
            'free_vcpus': self.free_vcpus,
            'free_ram_mb': self.free_ram_mb,
            'free_disk_mb': self.free_disk_mb,
            'num_instances': self.num_instances,
            'num_io_ops': self.num_io_ops,
            'availability_zone': self.availability_zone,
        }

    def pci_device_count(self) -> int:
        return sum(int(p.get('count', 0)) for p in self.pci_pools)
