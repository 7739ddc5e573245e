"""NUMATopologyFilter."""

from __future__ import annotations

from nimbus.scheduler import numa
from nimbus.scheduler.filters.base import BaseHostFilter, cached


def requested_topology(spec):
    """The request's NUMA topology (cached per request), None, or an InvalidNUMARequest."""

    def compute():
        try:
            return numa.instance_topology(spec)
        except numa.InvalidNUMARequest as exc:
            return exc

    return cached(spec, 'numa_topology', compute)


def host_fit_wanted(spec) -> bool:
    """True when the request asks for a (valid) NUMA topology."""
    topo = requested_topology(spec)
    return topo is not None and not isinstance(topo, numa.InvalidNUMARequest)


def host_fit(host_state, spec):
    topo = requested_topology(spec)
    if topo is None or isinstance(topo, numa.InvalidNUMARequest):
        return None
    return numa.fit(
        host_state.numa_cells,
        topo,
        host_state.cpu_allocation_ratio,
        host_state.ram_allocation_ratio,
    )


class NUMATopologyFilter(BaseHostFilter):
    """Packs the instance's NUMA cells onto distinct host NUMA cells.

    Reads: flavor ``hw:numa_nodes``, ``hw:cpu_policy`` (``dedicated`` pins vCPUs to free
    ``pcpuset`` CPUs), ``hw:numa_cpus.N``, ``hw:numa_mem.N``, or the image's
    ``hw_numa_nodes``, ``hw_cpu_policy``, ``hw_numa_cpus.N``, ``hw_numa_mem.N``;
    ``host_state.numa_cells`` with the host's ``cpu_allocation_ratio`` and
    ``ram_allocation_ratio`` for shared CPUs and memory. A request without topology passes
    everywhere; one with topology needs a NUMA-capable host. Options: none.
    Example: ``hw:numa_nodes=2, hw:cpu_policy=dedicated`` with 8 vCPUs needs two host
    cells with 4 free pinned CPUs each.
    """

    def is_enabled_for(self, spec):
        return requested_topology(spec) is not None

    def host_passes(self, host_state, spec):
        topo = requested_topology(spec)
        if isinstance(topo, numa.InvalidNUMARequest):
            return False
        return (
            numa.fit(
                host_state.numa_cells,
                topo,
                host_state.cpu_allocation_ratio,
                host_state.ram_allocation_ratio,
            )
            is not None
        )

    def reject_reason(self, host_state, spec):
        topo = requested_topology(spec)
        if isinstance(topo, numa.InvalidNUMARequest):
            return str(topo)
        return numa.explain_misfit(
            host_state.numa_cells,
            topo,
            host_state.cpu_allocation_ratio,
            host_state.ram_allocation_ratio,
        )
