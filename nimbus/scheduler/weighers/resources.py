"""Weighers on free resources and load."""

from __future__ import annotations

import operator

from nimbus.scheduler.filters import pci as pci_filter
from nimbus.scheduler.weighers.base import BaseHostWeigher
from nimbus.scheduler.weighers.base import HostAttributeWeigher

_COUNT = operator.methodcaller('get', 'count', 0)  # a PCI pool's free devices


class RAMWeigher(HostAttributeWeigher):
    """Prefers hosts with more free RAM (spreading); a negative multiplier stacks.

    Reads: ``host_state.free_ram_mb``. Option: ``[filter_scheduler] ram_weight_multiplier``
    (default 1.0; aggregate key of the same name). Example: ``ram_weight_multiplier=-1.0``
    fills hosts one by one.
    """

    multiplier_option = 'ram_weight_multiplier'
    raw_attribute = 'free_ram_mb'


class CPUWeigher(HostAttributeWeigher):
    """Prefers hosts with more free vCPUs (``vcpus_total * cpu_allocation_ratio -
    vcpus_used``, placement's capacity when known).

    Option: ``[filter_scheduler] cpu_weight_multiplier`` (default 1.0).
    Example: ``cpu_weight_multiplier=2.0`` doubles CPU's say against RAM.
    """

    multiplier_option = 'cpu_weight_multiplier'
    raw_attribute = 'free_vcpus'


class DiskWeigher(HostAttributeWeigher):
    """Prefers hosts with more free disk (``free_disk_mb``).

    Option: ``[filter_scheduler] disk_weight_multiplier`` (default 1.0).
    Example: ``disk_weight_multiplier=0`` ignores disk.
    """

    multiplier_option = 'disk_weight_multiplier'
    raw_attribute = 'free_disk_mb'


class IoOpsWeigher(HostAttributeWeigher):
    """Weighs by concurrent I/O-heavy tasks; the default multiplier -1.0 prefers idle hosts.

    Reads: ``host_state.num_io_ops``. Option: ``[filter_scheduler]
    io_ops_weight_multiplier`` (default -1.0). Example: +1.0 packs busy hosts.
    """

    multiplier_option = 'io_ops_weight_multiplier'
    raw_attribute = 'num_io_ops'


class NumInstancesWeigher(HostAttributeWeigher):
    """Weighs by instance count; positive multipliers pack, negative spread.

    Reads: ``host_state.num_instances``. Option: ``[filter_scheduler]
    num_instances_weight_multiplier`` (default 0.0, i.e. off). Example: -1.0 prefers
    hosts with fewer instances.
    """

    multiplier_option = 'num_instances_weight_multiplier'
    raw_attribute = 'num_instances'


class PCIWeigher(BaseHostWeigher):
    """Keeps PCI hosts for PCI work. Without a PCI request, hosts with fewer PCI devices
    win (raw = -free devices); with a request of r devices, hosts whose free devices are
    closest to r win (raw = -(free - r)), so a 1-device request prefers the 1-device host.

    Reads: ``host_state.pci_pools``, flavor ``pci_passthrough:alias``. Option:
    ``[filter_scheduler] pci_weight_multiplier`` (default 1.0, must be >= 0).
    Example: hosts with 0, 1 and 4 free devices: a non-PCI request prefers the first,
    a 1-device request the second.
    """

    multiplier_option = 'pci_weight_multiplier'

    def weigh(self, host_state, spec):
        free = host_state.pci_device_count()
        return -(free - pci_filter.requested_count(spec, self.conf))

    def raw_values(self, hosts, spec):
        r = pci_filter.requested_count(spec, self.conf)
        return [
            -(sum(map(int, map(_COUNT, pools))) - r) if pools else r
            for pools in [h.pci_pools for h in hosts]
        ]

    def raw_column(self, table, slots, spec):
        if not self._own(PCIWeigher):
            return None
        r = pci_filter.requested_count(spec, self.conf)
        # r - free equals -(free - r) for these small integers, and is 0.0
        # (not -0.0) when they are equal
        return float(r) - table.column('pci_free', slots)
