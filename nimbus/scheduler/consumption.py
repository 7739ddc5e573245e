"""What one request takes, in memory, while it is being placed.

Each placed instance consumes its chosen allocation request per resource class and
provider (child providers such as a GPU's and sharing providers included) against
placement's provider summaries, so that the next instance of a multi-create and the
alternates only go where something is left. The host's own VCPU, MEMORY_MB and DISK_GB
(anywhere in its provider tree) also move its HostState figures, which the weighers and
filters read; NUMA cells and PCI pools are consumed as the compute's claim would.

Without placement (unit tests, ``alloc_reqs=None``) the request's unnumbered group
(VCPU or PCPU, MEMORY_MB, DISK_GB and ``resources:RC`` extra specs) is checked against
the host's figures instead.
"""

from __future__ import annotations

from nimbus.scheduler import exception, request_filters
from nimbus.scheduler.filters import numa as numa_filter
from nimbus.scheduler.filters import pci as pci_filter
from nimbus.scheduler.filters.base import cached

# Resource classes that the HostState mirrors as attributes.
HOST_ATTRIBUTE_RCS = ('VCPU', 'MEMORY_MB', 'DISK_GB')


def instance_resources(spec):
    """(vcpus, memory_mb, disk_gb) of one instance of the flavor."""
    f = spec.flavor
    disk = 0 if spec.is_bfv else f.root_gb
    return (
        f.vcpus,
        f.memory_mb,
        disk + f.ephemeral_gb + (f.swap + 1023) // 1024,
    )


def root_resources(spec) -> dict:
    """The unnumbered group's resources, as the placement query asks for them (PCPU
    instead of VCPU for dedicated CPUs, ``resources:RC`` extra specs included)."""

    def compute():
        q = request_filters.Query()
        try:
            request_filters.flavor_resources(q, spec, None, [])
        except exception.InvalidRequest:
            vcpus, ram, disk = instance_resources(spec)
            return {'VCPU': vcpus, 'MEMORY_MB': ram, 'DISK_GB': disk}
        return {rc: n for rc, n in q.groups[''].resources.items() if n}

    return cached(spec, 'root_resources', compute)


def as_list(value) -> list:
    """An ``alloc_reqs`` value: one allocation request or a list of them."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    return [value]


class ProviderUsage:
    """Placement's provider summaries plus what this request has taken so far.
    The summaries are never modified; ``taken`` holds the request's own consumption."""

    __slots__ = ('summaries', 'taken')

    def __init__(self, summaries=None):
        self.summaries = summaries or {}
        self.taken: dict[str, dict[str, int]] = {}

    def free(self, rp, rc):
        """Room left for ``rc`` on provider ``rp``; None when placement did not say."""
        summary = self.summaries.get(rp)
        if summary is None:
            return None
        res = (summary.get('resources') or {}).get(rc)
        if res is None:
            return None
        return (
            res['capacity'] - res['used'] - self.taken.get(rp, {}).get(rc, 0)
        )

    def root_of(self, rp):
        summary = self.summaries.get(rp) or {}
        return summary.get('root_provider_uuid') or rp

    def take(self, areq, sign=1) -> None:
        for rp, alloc in (areq or {}).get('allocations', {}).items():
            taken = self.taken.setdefault(rp, {})
            for rc, amount in alloc['resources'].items():
                taken[rc] = taken.get(rc, 0) + sign * amount

    def give_back(self, areq) -> None:
        self.take(areq, -1)

    def snapshot(self):
        return {rp: dict(t) for rp, t in self.taken.items()}

    def restore(self, snap) -> None:
        self.taken = snap


def _host_free(host, rc):
    if rc == 'VCPU':
        return host.free_vcpus
    if rc == 'MEMORY_MB':
        return host.free_ram_mb
    if rc == 'DISK_GB':
        return host.free_disk_mb / 1024
    res = (host.resources or {}).get(rc)
    if res is None:
        return None
    return res['capacity'] - res['used']


def request_fits(host, areq, usage: ProviderUsage | None) -> bool:
    """Does ``areq`` still fit, given what this request took already?"""
    for rp, alloc in areq.get('allocations', {}).items():
        known = usage is not None and rp in usage.summaries
        for rc, amount in alloc['resources'].items():
            if known:
                free = usage.free(rp, rc)
            elif rp == host.uuid:
                free = _host_free(host, rc)
            else:
                free = None  # a provider placement did not summarise
            if free is not None and free < amount:
                return False
    return True


def fitting_request(host, areqs, usage):
    """The first of the host's allocation requests that still fits, or None."""
    for areq in areqs:
        if request_fits(host, areq, usage):
            return areq
    return None


def host_fits(host, spec, areqs, usage) -> bool:
    """Can the host take one more instance of ``spec``?"""
    if areqs:
        return fitting_request(host, areqs, usage) is not None
    for rc, amount in root_resources(spec).items():
        free = _host_free(host, rc)
        if free is not None and free < amount:
            return False
    return True


def resources_on_host(host, areq, usage) -> dict:
    """VCPU, MEMORY_MB and DISK_GB that ``areq`` takes in the host's own provider tree
    (not on sharing providers)."""
    out: dict[str, int] = {}
    for rp, alloc in areq.get('allocations', {}).items():
        if rp != host.uuid and (
            usage is None or usage.root_of(rp) != host.uuid
        ):
            continue
        for rc in HOST_ATTRIBUTE_RCS:
            amount = alloc['resources'].get(rc)
            if amount:
                out[rc] = out.get(rc, 0) + amount
    return out


def consume(host, spec, conf, instance_uuid, areq=None, usage=None) -> None:
    """Consume one instance of ``spec`` on ``host``: the allocation request per
    resource class and provider, and NUMA cells and PCI devices."""
    fit = numa_filter.host_fit(host, spec)
    take = None
    try:
        reqs = pci_filter.pci_requests(spec, conf)
    except pci_filter.InvalidPciAlias:
        reqs = []
    if reqs:
        take = pci_filter.plan(host.pci_pools, reqs)
    if areq is not None:
        if usage is not None:
            usage.take(areq)
        resources = resources_on_host(host, areq, usage)
    else:
        resources = root_resources(spec)
    host.consume_from_request(
        spec, instance_uuid, numa_fit=fit, pci_take=take, resources=resources
    )
    group = spec.instance_group
    if group is not None:
        if instance_uuid and instance_uuid not in group.members:
            group.members.append(instance_uuid)
        group.hosts.append(host.host)
