"""Filters driven by host aggregate metadata. When a host is in several aggregates that
set the same numeric key, the minimum wins; for string keys any aggregate's value may
match."""

from __future__ import annotations

from nimbus.scheduler.filters import compute
from nimbus.scheduler.filters.base import BaseHostFilter, cached
from nimbus.extra_specs.ops import Requirement

_SCOPE = 'aggregate_instance_extra_specs'


def _split(values):
    out = set()
    for v in values:
        out.update(x.strip() for x in str(v).split(','))
    return out


class AggregateInstanceExtraSpecsFilter(BaseHostFilter):
    """Matches flavor extra specs against the metadata of the host's aggregates.

    Reads: extra specs that are unscoped or scoped ``aggregate_instance_extra_specs:``;
    aggregate metadata (comma-separated values mean alternatives). Operators as in
    ComputeCapabilitiesFilter. Example: flavor ``aggregate_instance_extra_specs:ssd=true``
    goes only to hosts in an aggregate with ``ssd=true``.
    """

    run_filter_once_per_request = True

    def _reqs(self, spec):
        def compute():
            out = []
            for key, value in spec.flavor.extra_specs.items():
                parts = key.split(':', 1)
                if len(parts) == 2:
                    if parts[0] != _SCOPE:
                        continue
                    key = parts[1]
                out.append((key, Requirement(value)))
            return out

        return cached(spec, 'agg_extra_specs', compute)

    def is_enabled_for(self, spec):
        return bool(self._reqs(spec))

    def host_passes(self, host_state, spec):
        meta = host_state.aggregate_metadata
        for key, req in self._reqs(spec):
            values = meta.get(key)
            if not values or not any(req.matches(v) for v in _split(values)):
                return False
        return True

    def reject_reason(self, host_state, spec):
        meta = host_state.aggregate_metadata
        for key, req in self._reqs(spec):
            values = meta.get(key)
            if not values:
                return f'no aggregate of the host sets {key!r}'
            if not any(req.matches(v) for v in _split(values)):
                return f'aggregate {key}={sorted(values)} does not match {req.text!r}'
        return 'passes'


class _AggregateResourceFilter(BaseHostFilter):
    ratio_key = ''

    def _room(self, host_state):  # pragma: no cover - abstract
        raise NotImplementedError

    def _needed(self, spec):  # pragma: no cover - abstract
        raise NotImplementedError

    def host_passes(self, host_state, spec):
        total, used, ratio = self._room(host_state)
        if not total:
            return True
        return total * ratio - used >= self._needed(spec)

    def reject_reason(self, host_state, spec):
        total, used, ratio = self._room(host_state)
        return (
            f'needs {self._needed(spec)}, host has {total * ratio - used:g} free '
            f'({self.ratio_key} {ratio:g})'
        )


class AggregateCoreFilter(_AggregateResourceFilter):
    """Checks free vCPUs with ``cpu_allocation_ratio`` from aggregate metadata (minimum
    wins), else the host's own ratio. Deprecated in Nova (placement does this).

    Reads: ``vcpus_total``, ``vcpus_used``, flavor vcpus. Example: aggregate metadata
    ``cpu_allocation_ratio=2.0`` on a 16-core host allows 32 vCPUs.
    """

    ratio_key = 'cpu_allocation_ratio'

    def _room(self, h):
        return (
            h.vcpus_total,
            h.vcpus_used,
            h.aggregate_min(self.ratio_key, h.cpu_allocation_ratio),
        )

    def _needed(self, spec):
        return spec.flavor.vcpus


class AggregateRamFilter(_AggregateResourceFilter):
    """Checks free RAM with ``ram_allocation_ratio`` from aggregate metadata (minimum
    wins), else the host's own ratio. Deprecated in Nova.

    Reads: ``memory_mb``, ``memory_mb_used``, flavor memory_mb. Example: metadata
    ``ram_allocation_ratio=1.0`` forbids RAM overcommit in that aggregate.
    """

    ratio_key = 'ram_allocation_ratio'

    def _room(self, h):
        return (
            h.memory_mb,
            h.memory_mb_used,
            h.aggregate_min(self.ratio_key, h.ram_allocation_ratio),
        )

    def _needed(self, spec):
        return spec.flavor.memory_mb


class AggregateDiskFilter(_AggregateResourceFilter):
    """Checks free disk (GB) with ``disk_allocation_ratio`` from aggregate metadata
    (minimum wins), else the host's own ratio. Deprecated in Nova.

    Reads: ``local_gb``, ``local_gb_used``, flavor root+ephemeral+swap. Example: metadata
    ``disk_allocation_ratio=1.5``.
    """

    ratio_key = 'disk_allocation_ratio'

    def is_enabled_for(self, spec):
        return not spec.is_bfv or spec.flavor.ephemeral_gb or spec.flavor.swap

    def _room(self, h):
        return (
            h.local_gb,
            h.local_gb_used,
            h.aggregate_min(self.ratio_key, h.disk_allocation_ratio),
        )

    def _needed(self, spec):
        f = spec.flavor
        root = 0 if spec.is_bfv else f.root_gb
        return root + f.ephemeral_gb + (f.swap + 1023) // 1024


class _AggregateCountFilter(compute.CountFilter):
    """:class:`~.compute.CountFilter` with the limit from aggregate
    metadata (the option's name as key; minimum wins), else the option."""

    def _limit(self, h):
        return h.aggregate_min(
            self.option, getattr(self.conf.filter_scheduler, self.option)
        )

    def mask(self, table, slots, spec):
        # Hosts without the aggregate key get the option's limit: when
        # no host of the table has the key, every limit is the option.
        if not self._own(
            _AggregateCountFilter, '_limit'
        ) or table.agg_keys.get(self.option):
            return None
        return self._below(table, slots)


class AggregateNumInstancesFilter(_AggregateCountFilter):
    """NumInstancesFilter with ``max_instances_per_host`` from aggregate metadata (minimum
    wins), else ``[filter_scheduler] max_instances_per_host``.

    Reads: ``host_state.num_instances`` (re-checked per instance of a multi-create).
    Options: ``[filter_scheduler] max_instances_per_host`` (default 50).
    Example: metadata ``max_instances_per_host=10`` caps hosts of that aggregate at 10.
    """

    count, option, noun = (
        'num_instances',
        'max_instances_per_host',
        'instances',
    )


class AggregateIoOpsFilter(_AggregateCountFilter):
    """IoOpsFilter with ``max_io_ops_per_host`` from aggregate metadata (minimum wins),
    else ``[filter_scheduler] max_io_ops_per_host``.

    Reads: ``host_state.num_io_ops`` (re-checked per instance of a multi-create).
    Options: ``[filter_scheduler] max_io_ops_per_host`` (default 8).
    Example: metadata ``max_io_ops_per_host=2`` for hosts with slow disks.
    """

    count, option, noun = 'num_io_ops', 'max_io_ops_per_host', 'I/O operations'


class AggregateTypeAffinityFilter(BaseHostFilter):
    """Limits flavors to aggregates: a host in aggregates with ``instance_type`` metadata
    takes only those flavor names (comma-separated). Hosts without the key take any.

    Reads: aggregate metadata ``instance_type``, ``spec.flavor.name``. Options: none.
    Example: metadata ``instance_type=m1.nano,m1.small``.
    """

    run_filter_once_per_request = True

    def host_passes(self, host_state, spec):
        values = host_state.aggregate_metadata.get('instance_type')
        if not values:
            return True
        return spec.flavor.name in _split(values)

    def reject_reason(self, host_state, spec):
        values = sorted(
            _split(host_state.aggregate_metadata.get('instance_type', ()))
        )
        return f'aggregate allows flavors {values}, not {spec.flavor.name!r}'


def _tenant_values(meta):
    out = set()
    for key, values in meta.items():
        if key == 'filter_tenant_id' or key.startswith('filter_tenant_id'):
            out |= _split(values)
    return out


class AggregateMultiTenancyIsolation(BaseHostFilter):
    """Hosts in aggregates with ``filter_tenant_id`` (or ``filter_tenant_id_*``) metadata
    take only those projects (comma-separated); other hosts take any project.

    Reads: ``spec.project_id``. Example: metadata ``filter_tenant_id=p1,p2``.
    """

    run_filter_once_per_request = True

    def host_passes(self, host_state, spec):
        meta = host_state.aggregate_metadata
        if not meta:
            return True
        allowed = _tenant_values(meta)
        return not allowed or spec.project_id in allowed

    def reject_reason(self, host_state, spec):
        return f'host is reserved for projects {sorted(_tenant_values(host_state.aggregate_metadata))}'


class AggregateImagePropertiesIsolation(BaseHostFilter):
    """For each aggregate metadata key that the image also sets as a property, the image's
    value must be one of the aggregate's (comma-separated). Keys the image does not set
    are ignored.

    Options: ``[filter_scheduler] aggregate_image_properties_isolation_namespace`` (only
    keys with this prefix are considered) and ``..._separator`` (default ``.``).
    Example: aggregate ``os_distro=windows`` with an image ``os_distro=ubuntu`` -> rejected.
    """

    run_filter_once_per_request = True

    def is_enabled_for(self, spec):
        return bool(spec.image_props)

    def _mismatch(self, host_state, spec):
        fs = self.conf.filter_scheduler
        ns = fs.aggregate_image_properties_isolation_namespace
        prefix = (
            f'{ns}{fs.aggregate_image_properties_isolation_separator}'
            if ns
            else None
        )
        props = spec.image_props
        for key, values in host_state.aggregate_metadata.items():
            if prefix and not key.startswith(prefix):
                continue
            prop = props.get(key)
            if prop is None:
                continue
            wanted = prop if isinstance(prop, (list, tuple)) else [prop]
            allowed = _split(values)
            if not any(str(w) in allowed for w in wanted):
                return key, sorted(allowed), prop
        return None

    def host_passes(self, host_state, spec):
        if not host_state.aggregate_metadata:
            return True
        return self._mismatch(host_state, spec) is None

    def reject_reason(self, host_state, spec):
        m = self._mismatch(host_state, spec)
        if m is None:
            return 'passes'
        return f'aggregate {m[0]}={m[1]}, image has {m[2]!r}'
