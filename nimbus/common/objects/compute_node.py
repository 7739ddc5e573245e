"""ComputeNodeRecord (contract 1.0): what a compute reports of its node to
its cell conductor (``compute_node_update``), which writes the cell's
``compute_nodes`` row (computes hold no database credentials).

``uuid`` (the root provider's) and ``host`` are required. The other fields
are changes: only those set are on the wire and written (the periodic
report sends them all, a failed build only ``failed_builds``). ``stats``
is the driver's free-form ``{name: string}``. Keys a newer minor adds are
kept in ``extra`` (and not written).
"""

from __future__ import annotations

import dataclasses

from nimbus.common.objects import base

_INT = (
    'hypervisor_version',
    'vcpus',
    'memory_mb',
    'local_gb',
    'vcpus_used',
    'memory_mb_used',
    'local_gb_used',
    'running_vms',
    'current_workload',
    'failed_builds',
)
_FLOAT = (
    'cpu_allocation_ratio',
    'ram_allocation_ratio',
    'disk_allocation_ratio',
)
_STR = ('hypervisor_hostname', 'hypervisor_type', 'host_ip')
# JSON facts the cell stores as they come (drivers shape them).
_JSON = (
    'cpu_info',
    'supported_instances',
    'numa_topology',
    'pci_stats',
    'metrics',
)
FIELDS = _STR + _INT + _FLOAT + _JSON + ('stats',)


@dataclasses.dataclass(slots=True)
class ComputeNodeRecord:
    uuid: str
    host: str
    # {field: value} of the fields this report sets (of FIELDS).
    values: dict = dataclasses.field(default_factory=dict)
    extra: dict = dataclasses.field(default_factory=dict)

    VERSION = '1.0'

    @classmethod
    def from_primitive(cls, d: dict) -> 'ComputeNodeRecord':
        name = 'node'
        base.check(d, name, cls.VERSION)
        values = {}
        for key in _STR:
            if key in d:
                values[key] = base.expect(d[key], str, name, key)
        for key in _INT:
            if key in d:
                values[key] = base.expect(d[key], int, name, key)
        for key in _FLOAT:
            if key in d:
                values[key] = base.expect(d[key], (int, float), name, key)
        for key in _JSON:
            if key in d:
                values[key] = d[key]
        if 'stats' in d:
            stats = d['stats']
            if stats is not None and not (
                isinstance(stats, dict)
                and all(isinstance(v, str) for v in stats.values())
            ):
                raise base.MalformedPrimitive(
                    '%s: stats must be an object of strings' % name
                )
            values['stats'] = stats
        known = set(FIELDS) | {'uuid', 'host', base.VERSION_KEY}
        return cls(
            uuid=base.expect(d.get('uuid'), str, name, 'uuid', False),
            host=base.expect(d.get('host'), str, name, 'host', False),
            values=values,
            extra={k: v for k, v in d.items() if k not in known},
        )

    def to_primitive(self) -> dict:
        out = {base.VERSION_KEY: self.VERSION}
        out.update(self.extra)
        out.update(self.values)
        out['uuid'] = self.uuid
        out['host'] = self.host
        return out

    @classmethod
    def of(cls, uuid, host, **values) -> 'ComputeNodeRecord':
        """A record setting ``values`` (keys of :data:`FIELDS`)."""
        unknown = sorted(set(values) - set(FIELDS))
        if unknown:
            raise ValueError('not node fields: %s' % ', '.join(unknown))
        return cls(uuid=uuid, host=host, values=values)
