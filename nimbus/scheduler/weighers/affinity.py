"""Soft server-group policies."""

from __future__ import annotations

from nimbus.scheduler.filters.affinity import group_count_on_host
from nimbus.scheduler.weighers.base import BaseHostWeigher


class _GroupWeigher(BaseHostWeigher):
    policy = ''
    sign = 1

    def is_enabled_for(self, spec):
        g = spec.instance_group
        return g is not None and g.policy == self.policy

    def weigh(self, host_state, spec):
        g = spec.instance_group
        if g is None or g.policy != self.policy:
            return 0
        return self.sign * group_count_on_host(g, host_state)


class ServerGroupSoftAffinityWeigher(_GroupWeigher):
    """Prefers hosts that already run members of the request's ``soft-affinity`` group
    (raw = members on the host).

    Option: ``[filter_scheduler] soft_affinity_weight_multiplier`` (default 1.0, >= 0).
    Example: a group of 3 lands on one host while it fits, then spills over.
    """

    multiplier_option = 'soft_affinity_weight_multiplier'
    policy = 'soft-affinity'
    sign = 1


class ServerGroupSoftAntiAffinityWeigher(_GroupWeigher):
    """Prefers hosts with fewer members of the request's ``soft-anti-affinity`` group
    (raw = -members on the host).

    Option: ``[filter_scheduler] soft_anti_affinity_weight_multiplier`` (default 1.0).
    Example: 4 instances on 2 hosts end up 2 + 2.
    """

    multiplier_option = 'soft_anti_affinity_weight_multiplier'
    policy = 'soft-anti-affinity'
    sign = -1
