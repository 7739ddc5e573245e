"""Placement relative to other instances: same/different host, CIDR, server groups."""

from __future__ import annotations

import ipaddress

from nimbus.scheduler.filters.base import BaseHostFilter


class SameHostFilter(BaseHostFilter):
    """Passes hosts that run at least one of the instances in the ``same_host`` hint.

    Reads: ``scheduler_hints['same_host']`` (instance uuids), ``host_state.instances``.
    Example: ``--hint same_host=<uuid-a>`` lands next to instance a.
    """

    run_filter_once_per_request = True

    def is_enabled_for(self, spec):
        return bool(spec.hint_list('same_host'))

    def host_passes(self, host_state, spec):
        instances = host_state.instances
        return any(u in instances for u in spec.hint_list('same_host'))

    def reject_reason(self, host_state, spec):
        return 'host runs none of the same_host instances'


class DifferentHostFilter(BaseHostFilter):
    """Passes hosts that run none of the instances in the ``different_host`` hint.

    Reads: ``scheduler_hints['different_host']``, ``host_state.instances``.
    Example: ``--hint different_host=<uuid-a> --hint different_host=<uuid-b>``.
    """

    run_filter_once_per_request = True

    def is_enabled_for(self, spec):
        return bool(spec.hint_list('different_host'))

    def host_passes(self, host_state, spec):
        instances = host_state.instances
        return not any(
            u in instances for u in spec.hint_list('different_host')
        )

    def reject_reason(self, host_state, spec):
        return 'host runs one of the different_host instances'


class SimpleCIDRAffinityFilter(BaseHostFilter):
    """Passes hosts whose ``host_ip`` is in the network ``build_near_host_ip`` + ``cidr``.

    Reads: hints ``build_near_host_ip`` and ``cidr`` (e.g. ``/24``), ``host_state.host_ip``.
    Example: ``--hint build_near_host_ip=10.0.0.5 --hint cidr=/24`` keeps 10.0.0.0/24.
    """

    run_filter_once_per_request = True

    def is_enabled_for(self, spec):
        return bool(spec.get_hint('build_near_host_ip'))

    def _network(self, spec):
        ip = spec.get_hint('build_near_host_ip')
        cidr = spec.get_hint('cidr') or '/0'
        return ipaddress.ip_network(f'{ip}{cidr}', strict=False)

    def host_passes(self, host_state, spec):
        if not host_state.host_ip:
            return False
        try:
            return ipaddress.ip_address(host_state.host_ip) in self._network(
                spec
            )
        except ValueError:
            return False

    def reject_reason(self, host_state, spec):
        try:
            net = self._network(spec)
        except ValueError:
            return 'build_near_host_ip/cidr hint is not a valid network'
        return f'host_ip {host_state.host_ip} is outside {net}'


def _group(spec, policy):
    group = spec.instance_group
    if group is None or group.policy != policy:
        return None
    return group


def group_count_on_host(group, host_state) -> int:
    """How many members of the group already run on this host."""
    instances = host_state.instances
    by_instances = sum(1 for m in group.members if m in instances)
    by_hosts = group.hosts.count(host_state.host)
    return max(by_instances, by_hosts)


class ServerGroupAntiAffinityFilter(BaseHostFilter):
    """Anti-affinity for server groups with policy ``anti-affinity``: a host may hold at
    most ``rules['max_server_per_host']`` (default 1) members of the group.

    Reads: ``spec.instance_group`` (members, hosts, rules), ``host_state.instances``.
    Re-evaluated after each instance of a multi-create. Example: group with
    ``max_server_per_host=2`` and 4 instances -> at least 2 hosts.
    """

    depends_on_request_progress = True

    def is_enabled_for(self, spec):
        return _group(spec, 'anti-affinity') is not None

    def _max(self, group):
        try:
            return int((group.rules or {}).get('max_server_per_host', 1))
        except (TypeError, ValueError):
            return 1

    def host_passes(self, host_state, spec):
        group = spec.instance_group
        return group_count_on_host(group, host_state) < self._max(group)

    def filter_all(self, hosts, spec):
        group = spec.instance_group
        limit = self._max(group)
        members = set(group.members)
        used = {}
        for h in group.hosts:
            used[h] = used.get(h, 0) + 1
        if not members and not used:
            return list(hosts)
        out = []
        for h in hosts:
            inst = h.instances
            n = (
                sum(1 for m in members if m in inst)
                if len(members) < len(inst)
                else sum(1 for u in inst if u in members)
            )
            if max(n, used.get(h.host, 0)) < limit:
                out.append(h)
        return out

    def reject_reason(self, host_state, spec):
        group = spec.instance_group
        return (
            f'host already has {group_count_on_host(group, host_state)} members of '
            f'anti-affinity group {group.name or group.uuid} (max {self._max(group)})'
        )


class ServerGroupAffinityFilter(BaseHostFilter):
    """Affinity for server groups with policy ``affinity``: once a member is placed, every
    other member must go to the same host(s).

    Reads: ``spec.instance_group.hosts``. Re-evaluated after each instance of a
    multi-create. Example: the first instance picks host-4, the rest follow it.
    """

    depends_on_request_progress = True

    def is_enabled_for(self, spec):
        return _group(spec, 'affinity') is not None

    def host_passes(self, host_state, spec):
        hosts = spec.instance_group.hosts
        return not hosts or host_state.host in hosts

    def filter_all(self, hosts, spec):
        group_hosts = set(spec.instance_group.hosts)
        if not group_hosts:
            return list(hosts)
        return [h for h in hosts if h.host in group_hosts]

    def reject_reason(self, host_state, spec):
        return f'affinity group members are on {sorted(set(spec.instance_group.hosts))}'
