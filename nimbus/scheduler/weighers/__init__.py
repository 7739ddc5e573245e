"""Host weighers. ``all_weighers()`` returns the built-in weigher classes plus any class
registered under the ``nimbus.scheduler.weighers`` entry point namespace."""

from nimbus.scheduler.weighers.base import BaseHostWeigher, normalize  # noqa: F401

ENTRY_POINT_NAMESPACE = 'nimbus.scheduler.weighers'


def builtin_weighers() -> list:
    from nimbus.scheduler.weighers import affinity, misc, resources

    return [
        resources.RAMWeigher,
        resources.CPUWeigher,
        resources.DiskWeigher,
        resources.IoOpsWeigher,
        resources.PCIWeigher,
        affinity.ServerGroupSoftAffinityWeigher,
        affinity.ServerGroupSoftAntiAffinityWeigher,
        misc.BuildFailureWeigher,
        misc.CrossCellWeigher,
        misc.MetricsWeigher,
        resources.NumInstancesWeigher,
        misc.HypervisorVersionWeigher,
        misc.ImagePropertiesWeigher,
    ]


def all_weighers() -> list:
    from nimbus.scheduler import plugins

    return plugins.with_entry_points(builtin_weighers(), ENTRY_POINT_NAMESPACE)
