"""BaseHostWeigher and normalisation.

Final weight of a host = sum over weighers of ``multiplier(host) * normalised(raw)``, where
``normalised`` maps the raw values of the candidate hosts linearly onto 0..1
(``(v - min) / (max - min)``; when all are equal, all are 0) and ``multiplier(host)`` is
the weigher's option, overridden by the host's aggregate metadata of the same name (the
minimum when several aggregates set it).
"""

from __future__ import annotations

import operator

from nimbus.scheduler import host_table


def normalize(values: list) -> list:
    """Map ``values`` linearly onto 0..1; all equal (or empty) -> all 0.0."""
    if not values:
        return []
    lo, hi = min(values), max(values)
    if hi == lo:
        return [0.0] * len(values)
    span = hi - lo
    return [(v - lo) / span for v in values]


def weigh_detail(hosts, weighers, spec) -> list[dict]:
    """Per host: total weight and, per weigher, raw / normalised / multiplier / weighted."""
    details = [{'weight': 0.0, 'weighers': {}} for _ in hosts]
    for w in weighers:
        raw = [w.weigh(h, spec) for h in hosts]
        norm = normalize(raw)
        for i, h in enumerate(hosts):
            m = w.weight_multiplier(h)
            weighted = m * norm[i]
            details[i]['weight'] = details[i]['weight'] + weighted
            details[i]['weighers'][w.name] = {
                'raw': raw[i],
                'normalized': norm[i],
                'multiplier': m,
                'weighted': weighted,
            }
    return details


class BaseHostWeigher:
    """Ranks hosts; larger weighted values win.

    Subclasses set ``multiplier_option`` (name in ``multiplier_group``, default
    ``filter_scheduler``) and implement :meth:`weigh` (raw value for one host).
    Optional hooks:

    * ``aggregate_key`` (default: ``multiplier_option``): aggregate metadata key that
      overrides the multiplier per host (minimum wins).
    * :meth:`is_enabled_for` (default True): False when every host would get the same raw
      value for this request; the weigher is then skipped (contributes 0 everywhere).
    * :meth:`raw_values` (default: :meth:`weigh` per host): batch form for speed.
    * ``raw_attribute`` (default None): the HostState attribute :meth:`weigh` returns
      unchanged, when it is one; the ranking then reads it for every host in one pass
      together with the other weighers' attributes. A subclass that changes
      :meth:`weigh` sets it back to None.
    * :meth:`raw_column` (default: the ``raw_attribute`` column of the host
      manager's table, when it has one): the raw values of many hosts at once from
      the table (``host_table.py``), float64, equal to :meth:`raw_values`; None when
      the table cannot give them (the ranking then calls :meth:`raw_values`).
    * :meth:`rejects_hosts` / :meth:`unweighable_reason` (default: never): a host the
      weigher cannot weigh for this request is rejected before weighing, with the
      reason, like a filter's (``MetricsWeigher`` with ``[metrics] required``).
    """

    multiplier_group = 'filter_scheduler'
    multiplier_option: str | None = None
    aggregate_key: str | None = None
    raw_attribute: str | None = None

    def __init__(self, conf=None):
        self.conf = conf

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def override_key(self) -> str | None:
        return self.aggregate_key or self.multiplier_option

    def default_multiplier(self) -> float:
        if self.multiplier_option is None or self.conf is None:
            return 1.0
        return float(
            getattr(
                getattr(self.conf, self.multiplier_group),
                self.multiplier_option,
            )
        )

    def weight_multiplier(self, host_state) -> float:
        key = self.override_key
        default = self.default_multiplier()
        if key is None:
            return default
        return host_state.aggregate_min(key, default)

    def is_enabled_for(self, spec) -> bool:
        return True

    def weigh(self, host_state, spec) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def raw_values(self, hosts: list, spec) -> list:
        weigh = self.weigh
        return [weigh(h, spec) for h in hosts]

    def raw_column(self, table, slots, spec):
        """Raw values of the table rows ``slots`` (float64 array), or None."""
        if self.raw_attribute in host_table.NUMERIC:
            return table.column(self.raw_attribute, slots)
        return None

    def _own(self, cls) -> bool:
        """True when ``weigh`` and ``raw_values`` are ``cls``'s (what a
        :meth:`raw_column` override mirrors)."""
        mine = type(self)
        return mine.weigh is cls.weigh and mine.raw_values is cls.raw_values

    def rejects_hosts(self, spec) -> bool:
        """True when :meth:`unweighable_reason` must be asked for this request."""
        return False

    def unweighable_reason(self, host_state, spec) -> str | None:
        """Why this host cannot be weighed for this request, or None."""
        return None


class HostAttributeWeigher(BaseHostWeigher):
    """A weigher whose raw value is the HostState attribute ``raw_attribute``
    as it is (free RAM, free vCPUs, the hypervisor version...)."""

    def weigh(self, host_state, spec):
        return getattr(host_state, self.raw_attribute)

    def raw_values(self, hosts, spec):
        return list(map(operator.attrgetter(self.raw_attribute), hosts))


class WeigherRequirement:
    """A weigher's "cannot weigh this host" as a filter, run after the configured
    filters so that explain and dry run name the weigher and its reason. The answer
    cannot change within a request."""

    run_filter_once_per_request = True
    depends_on_request_progress = False

    def __init__(self, weigher: BaseHostWeigher):
        self.weigher = weigher

    @property
    def name(self) -> str:
        return self.weigher.name

    def is_enabled_for(self, spec) -> bool:
        return self.weigher.is_enabled_for(
            spec
        ) and self.weigher.rejects_hosts(spec)

    def host_passes(self, host_state, spec) -> bool:
        return self.weigher.unweighable_reason(host_state, spec) is None

    def filter_all(self, hosts: list, spec) -> list:
        reason = self.weigher.unweighable_reason
        return [h for h in hosts if reason(h, spec) is None]

    def reject_reason(self, host_state, spec) -> str:
        return self.weigher.unweighable_reason(host_state, spec) or 'passes'


def requirements_of(weighers) -> list:
    """WeigherRequirement filters for the weighers that may reject hosts."""
    return [
        WeigherRequirement(w)
        for w in weighers
        if type(w).unweighable_reason is not BaseHostWeigher.unweighable_reason
    ]
