"""Weighers on history, location, hypervisor, images and metrics."""

from __future__ import annotations

from oslo_log import log as logging

from nimbus.scheduler.filters.base import cached
from nimbus.scheduler.weighers.base import BaseHostWeigher
from nimbus.scheduler.weighers.base import HostAttributeWeigher

LOG = logging.getLogger(__name__)


class BuildFailureWeigher(BaseHostWeigher):
    """Pushes hosts with recent failed builds down (raw = -failed_builds) without taking
    them out of rotation.

    Reads: ``host_state.failed_builds``. Option: ``[filter_scheduler]
    build_failure_weight_multiplier`` (default 1000000.0; 0 disables).
    Example: a host with 3 recent failures goes after every host without, but still
    takes instances when it is the only one left.
    """

    multiplier_option = 'build_failure_weight_multiplier'

    def weigh(self, host_state, spec):
        return -host_state.failed_builds

    def raw_values(self, hosts, spec):
        return [-h.failed_builds for h in hosts]

    def raw_column(self, table, slots, spec):
        if not self._own(BuildFailureWeigher):
            return None
        # 0.0 - x, not -x: no failures is 0.0 as in raw_values, not -0.0
        return 0.0 - table.column('failed_builds', slots)


def source_cell(spec):
    return (spec.extra or {}).get('source_cell_uuid')


class CrossCellWeigher(BaseHostWeigher):
    """On a move, prefers hosts in the instance's current cell (raw = 1 in the source
    cell, else 0). Off for new builds.

    Reads: ``spec.extra['source_cell_uuid']``, ``host_state.cell_uuid``. Option:
    ``[filter_scheduler] cross_cell_move_weight_multiplier`` (default 1000000.0; negative
    prefers other cells).
    Example: resizing an instance of cell1 prefers cell1's hosts over cell2's.
    """

    multiplier_option = 'cross_cell_move_weight_multiplier'

    def is_enabled_for(self, spec):
        return source_cell(spec) is not None

    def weigh(self, host_state, spec):
        src = source_cell(spec)
        return 1 if src is not None and host_state.cell_uuid == src else 0


class HypervisorVersionWeigher(HostAttributeWeigher):
    """Prefers newer hypervisors (raw = ``hypervisor_version`` as an integer).

    Option: ``[filter_scheduler] hypervisor_version_weight_multiplier`` (default 1.0;
    negative prefers older). Example: during an upgrade new builds go to upgraded hosts.
    """

    multiplier_option = 'hypervisor_version_weight_multiplier'
    raw_attribute = 'hypervisor_version'


class ImagePropertiesWeigher(BaseHostWeigher):
    """Prefers hosts running instances whose image properties equal the requested
    image's (raw = sum over instances on the host of matching properties, each counted
    with its ratio from ``image_props_weight_setting``, default 1).

    Reads: ``spec.image.properties``, ``host_state.instances[*]['image_properties']``
    (from the API database's images table by ``image_ref`` on a reload, from
    ``update_instance_info`` between reloads, from the request for instances placed
    earlier in the same multi-create).
    Options: ``[filter_scheduler] image_props_weight_multiplier`` (default 0.0, off),
    ``image_props_weight_setting`` (e.g. ``os_distro:10,hw_machine_type:1``).
    Example: multiplier 100 and ``os_distro:10``: a new ubuntu server joins the host
    that already runs ubuntu servers.
    """

    multiplier_option = 'image_props_weight_multiplier'

    def _setting(self):
        return {
            k: float(v)
            for k, v in (
                self.conf.filter_scheduler.image_props_weight_setting or {}
            ).items()
        }

    def is_enabled_for(self, spec):
        return bool(spec.image_props)

    def weigh(self, host_state, spec):
        props = spec.image_props
        if not props:
            return 0.0
        setting = self._setting()
        total = 0.0
        for inst in host_state.instances.values():
            iprops = inst.get('image_properties') or {}
            for k, v in props.items():
                if setting and k not in setting:
                    continue
                if iprops.get(k) == v:
                    total += setting.get(k, 1.0)
        return total


def parse_weight_setting(items) -> list[tuple[str, float]]:
    out = []
    for item in items or []:
        if '=' not in item:
            continue
        name, ratio = item.split('=', 1)
        try:
            out.append((name.strip(), float(ratio)))
        except ValueError:
            LOG.warning('ignoring bad [metrics] weight_setting entry %r', item)
    return out


class MetricsWeigher(BaseHostWeigher):
    """Weighs by host metrics: raw = sum of ``ratio * metric`` over
    ``[metrics] weight_setting`` (``name=ratio`` pairs).

    A host missing one of those metrics: with ``[metrics] required = True`` (default)
    it cannot be weighed and is rejected, with the missing metric as the reason in
    explain and dry run (Nova raises and fails the whole request instead); with
    ``required = False`` it gets ``[metrics] weight_of_unavailable`` (default -10000.0).
    With a multiplier of 0 nothing is weighed and nothing rejected.

    Options: ``[metrics] weight_multiplier`` (default 1.0; aggregate key
    ``metrics_weight_multiplier``), ``weight_setting``, ``required`` (default True),
    ``weight_of_unavailable``. Example: ``weight_setting = cpu.frequency=1.0,
    cpu.percent=-1.0``.
    """

    multiplier_group = 'metrics'
    multiplier_option = 'weight_multiplier'
    aggregate_key = 'metrics_weight_multiplier'

    def _setting(self, spec):
        return cached(
            spec,
            'metrics_setting',
            lambda: parse_weight_setting(self.conf.metrics.weight_setting),
        )

    def is_enabled_for(self, spec):
        return bool(self._setting(spec))

    def rejects_hosts(self, spec):
        return (
            bool(self.conf.metrics.required)
            and self.default_multiplier() != 0.0
        )

    def _missing(self, host_state, spec):
        metrics = host_state.metrics
        return [
            name
            for name, _ratio in self._setting(spec)
            if metrics.get(name) is None
        ]

    def unweighable_reason(self, host_state, spec):
        missing = self._missing(host_state, spec)
        if not missing:
            return None
        return (
            f'metric {", ".join(missing)} unavailable and [metrics] required is '
            f'true: the host cannot be weighed'
        )

    def weigh(self, host_state, spec):
        setting = self._setting(spec)
        if not setting:
            return 0.0
        metrics = host_state.metrics
        total = 0.0
        for name, ratio in setting:
            value = metrics.get(name)
            if value is None:
                # Only reached with required = False (required hosts were rejected).
                return self.conf.metrics.weight_of_unavailable
            total += ratio * float(value)
        return total
