"""Filters on the host's own state: service, zone, counters, retries, metrics, isolation."""

from __future__ import annotations

from nimbus.scheduler.filters.base import BaseHostFilter


class AllHostsFilter(BaseHostFilter):
    """Passes every host.

    Reads: nothing. Options: none. Example: ``enabled_filters = AllHostsFilter``.
    """

    run_filter_once_per_request = True

    def is_enabled_for(self, spec):
        return False

    def host_passes(self, host_state, spec):
        return True


class ComputeFilter(BaseHostFilter):
    """Passes hosts whose compute service is up and enabled.

    Reads: ``host_state.service_up``, ``host_state.service_disabled``. Options: none.
    Example: a host disabled with ``nimbus service set --disable host-3`` is rejected.
    """

    run_filter_once_per_request = True

    def host_passes(self, host_state, spec):
        return host_state.service_up and not host_state.service_disabled

    def filter_all(self, hosts, spec):
        return [h for h in hosts if h.service_up and not h.service_disabled]

    def mask(self, table, slots, spec):
        if not self._own(ComputeFilter):
            return None
        return table.ok[slots]

    def reject_reason(self, host_state, spec):
        if not host_state.service_up:
            return 'compute service is down'
        return f'compute service is disabled ({host_state.disabled_reason or "no reason"})'


class AvailabilityZoneFilter(BaseHostFilter):
    """Passes hosts in the requested availability zone (a comma-separated list means any).

    Reads: ``spec.availability_zone``; ``host_state.availability_zone`` (from aggregate
    metadata ``availability_zone``, else ``[scheduler] default_availability_zone``).
    Example: ``--availability-zone az1,az2`` keeps hosts of az1 and az2.
    """

    run_filter_once_per_request = True

    def is_enabled_for(self, spec):
        return bool(spec.availability_zone)

    def host_passes(self, host_state, spec):
        wanted = {z.strip() for z in spec.availability_zone.split(',')}
        have = set((host_state.availability_zone or '').split(','))
        return bool(wanted & have)

    def mask(self, table, slots, spec):
        if not self._own(AvailabilityZoneFilter):
            return None
        wanted = {z.strip() for z in spec.availability_zone.split(',')}
        return table.code_mask(
            'az', slots, lambda az: bool(wanted & set((az or '').split(',')))
        )

    def filter_all(self, hosts, spec):
        wanted = {z.strip() for z in spec.availability_zone.split(',')}
        out = []
        for h in hosts:
            az = h.availability_zone or ''
            if az in wanted or (',' in az and wanted & set(az.split(','))):
                out.append(h)
        return out

    def reject_reason(self, host_state, spec):
        return (
            f'host is in zone {host_state.availability_zone!r}, '
            f'request wants {spec.availability_zone!r}'
        )


class CountFilter(BaseHostFilter):
    """A host passes while its ``count`` (a HostState attribute) is below
    its limit, ``[filter_scheduler] <option>``; ``noun`` names the count
    in the reject reason. The instance and I/O counts' filters, and their
    aggregate variants (:mod:`.aggregate`), are this one check."""

    count = option = noun = None

    def _limit(self, host_state):
        return getattr(self.conf.filter_scheduler, self.option)

    def host_passes(self, host_state, spec):
        return getattr(host_state, self.count) < self._limit(host_state)

    def _below(self, table, slots):
        """The mask when every host's limit is the option's."""
        limit = getattr(self.conf.filter_scheduler, self.option)
        return table.column(self.count, slots) < limit

    def mask(self, table, slots, spec):
        if not self._own(CountFilter, '_limit'):
            return None
        return self._below(table, slots)

    def reject_reason(self, host_state, spec):
        return (
            f'host has {getattr(host_state, self.count)} {self.noun}, '
            f'limit {self._limit(host_state):g}'
        )


class NumInstancesFilter(CountFilter):
    """Rejects hosts that already run ``[filter_scheduler] max_instances_per_host``
    instances (default 50).

    Reads: ``host_state.num_instances``. Example: with the default, a host with 50
    instances is rejected, one with 49 passes.
    """

    count, option, noun = (
        'num_instances',
        'max_instances_per_host',
        'instances',
    )


class IoOpsFilter(CountFilter):
    """Rejects hosts with ``[filter_scheduler] max_io_ops_per_host`` (default 8) or more
    concurrent I/O-heavy tasks (builds, resizes, snapshots...).

    Reads: ``host_state.num_io_ops``. Example: a host building 8 instances is rejected.
    """

    count, option, noun = 'num_io_ops', 'max_io_ops_per_host', 'I/O operations'


class RetryFilter(BaseHostFilter):
    """Rejects hosts already tried for this request (``spec.retry['hosts']``, a list of
    ``[host, node]``). Deprecated in Nova since alternates exist; kept for parity.

    Reads: ``spec.retry``, ``host_state.host``/``nodename``. Options: none.
    Example: ``retry = {"num_attempts": 2, "hosts": [["host-1", "host-1"]]}`` drops host-1.
    """

    run_filter_once_per_request = True

    def is_enabled_for(self, spec):
        return bool(spec.retry and spec.retry.get('hosts'))

    def host_passes(self, host_state, spec):
        tried = {tuple(h) for h in spec.retry.get('hosts', [])}
        return (host_state.host, host_state.nodename) not in tried

    def reject_reason(self, host_state, spec):
        return 'host was already tried for this request'


class MetricsFilter(BaseHostFilter):
    """Rejects hosts that do not report every metric named in
    ``[metrics] weight_setting`` (so MetricsWeigher never meets a missing one).

    Reads: ``host_state.metrics``. Example: ``weight_setting = cpu.frequency=1.0``
    rejects hosts without a ``cpu.frequency`` metric.
    """

    run_filter_once_per_request = True

    def _names(self):
        names = []
        for item in self.conf.metrics.weight_setting:
            if '=' in item:
                names.append(item.split('=', 1)[0].strip())
        return names

    def is_enabled_for(self, spec):
        return bool(self._names())

    def host_passes(self, host_state, spec):
        metrics = host_state.metrics
        return all(n in metrics for n in self._names())

    def reject_reason(self, host_state, spec):
        missing = [n for n in self._names() if n not in host_state.metrics]
        return f'host lacks metrics {", ".join(missing)}'


class IsolatedHostsFilter(BaseHostFilter):
    """Keeps isolated images on isolated hosts.

    Options: ``[filter_scheduler] isolated_images``, ``isolated_hosts``,
    ``restrict_isolated_hosts_to_isolated_images`` (default True: isolated hosts take only
    isolated images). Reads: ``spec.image.id``, ``host_state.host``.
    Example: ``isolated_images = img-1`` and ``isolated_hosts = host-9`` send img-1 only to
    host-9 and keep other images off host-9.
    """

    run_filter_once_per_request = True

    def is_enabled_for(self, spec):
        fs = self.conf.filter_scheduler
        return bool(fs.isolated_images or fs.isolated_hosts)

    def host_passes(self, host_state, spec):
        fs = self.conf.filter_scheduler
        image_id = spec.image.id if spec.image is not None else None
        image_isolated = image_id in fs.isolated_images
        host_isolated = host_state.host in fs.isolated_hosts
        if fs.restrict_isolated_hosts_to_isolated_images:
            return image_isolated == host_isolated
        return (not image_isolated) or host_isolated

    def reject_reason(self, host_state, spec):
        if host_state.host in self.conf.filter_scheduler.isolated_hosts:
            return 'host is isolated and the image is not'
        return 'image is isolated and the host is not'
