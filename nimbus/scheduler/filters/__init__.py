"""Host filters. ``all_filters()`` returns the built-in filter classes plus any class
registered under the ``nimbus.scheduler.filters`` entry point namespace."""

from nimbus.scheduler.filters.base import BaseHostFilter, cached, request_cache  # noqa: F401

ENTRY_POINT_NAMESPACE = 'nimbus.scheduler.filters'


def builtin_filters() -> list:
    from nimbus.scheduler.filters import (
        affinity,
        aggregate,
        capabilities,
        compute,
    )
    from nimbus.scheduler.filters import json_filter, numa, pci

    return [
        compute.AllHostsFilter,
        compute.ComputeFilter,
        compute.AvailabilityZoneFilter,
        capabilities.ComputeCapabilitiesFilter,
        capabilities.ImagePropertiesFilter,
        aggregate.AggregateInstanceExtraSpecsFilter,
        aggregate.AggregateCoreFilter,
        aggregate.AggregateRamFilter,
        aggregate.AggregateDiskFilter,
        compute.IsolatedHostsFilter,
        json_filter.JsonFilter,
        compute.NumInstancesFilter,
        aggregate.AggregateNumInstancesFilter,
        compute.IoOpsFilter,
        aggregate.AggregateIoOpsFilter,
        pci.PciPassthroughFilter,
        numa.NUMATopologyFilter,
        affinity.SimpleCIDRAffinityFilter,
        affinity.DifferentHostFilter,
        affinity.SameHostFilter,
        compute.RetryFilter,
        aggregate.AggregateTypeAffinityFilter,
        affinity.ServerGroupAntiAffinityFilter,
        affinity.ServerGroupAffinityFilter,
        aggregate.AggregateMultiTenancyIsolation,
        aggregate.AggregateImagePropertiesIsolation,
        compute.MetricsFilter,
    ]


def all_filters() -> list:
    """Built-in filters plus entry points of ``nimbus.scheduler.filters``."""
    from nimbus.scheduler import plugins

    return plugins.with_entry_points(builtin_filters(), ENTRY_POINT_NAMESPACE)
