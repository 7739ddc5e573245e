"""BaseHostFilter and the per-request cache helpers filters share."""

from __future__ import annotations


def request_cache(spec) -> dict:
    """A dict that lives as long as this RequestSpec object (never sent on the wire).
    Filters and weighers put per-request constants here (parsed extra specs, ...)."""
    try:
        return spec.__dict__.setdefault('_sched_cache', {})
    except AttributeError:  # pragma: no cover - specs without __dict__
        return {}


def cached(spec, key, compute):
    cache = request_cache(spec)
    if key not in cache:
        cache[key] = compute()
    return cache[key]


class BaseHostFilter:
    """Decides whether one host can take the request.

    Subclasses implement :meth:`host_passes`. Optional hooks (each has a safe default):

    * ``run_filter_once_per_request`` (default False): True when the answer cannot change
      between the instances of one multi-create; the filter then runs for the first instance
      only.
    * ``depends_on_request_progress`` (default False): True when placing one instance of the
      request can change the answer for *other* hosts (server-group filters). Other filters
      are re-run only on the host that just received an instance.
    * :meth:`is_enabled_for` (default True): False when the request gives the filter nothing
      to check; the filter is then skipped and costs nothing. An exception propagates.
    * :meth:`filter_all` (default: ``host_passes`` per host): a batch form a filter may
      override for speed; it must keep the input order.
    * :meth:`reject_reason` (default: a generic sentence): a one-line reason why
      ``host_passes`` returned False for this host, used by explain / dry run only.
    * :meth:`mask` (default None): the verdicts of many hosts at once from the host
      manager's table (``host_table.py``), a bool array, or None when this filter or
      this request cannot be judged from the table; the selection then runs
      ``filter_all`` on the hosts the masks left. A mask must equal ``host_passes``
      host by host; it is used only while the class's ``host_passes`` and
      ``filter_all`` are the ones it was written for (see :meth:`_own`).
    """

    run_filter_once_per_request = False
    depends_on_request_progress = False

    def __init__(self, conf=None):
        self.conf = conf

    @property
    def name(self) -> str:
        return type(self).__name__

    def is_enabled_for(self, spec) -> bool:
        return True

    def host_passes(
        self, host_state, spec
    ) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def filter_all(self, hosts: list, spec) -> list:
        passes = self.host_passes
        return [h for h in hosts if passes(h, spec)]

    def reject_reason(self, host_state, spec) -> str:
        return 'host does not pass'

    def mask(self, table, slots, spec):
        """Verdicts for the table rows ``slots`` (bool array), or None."""
        return None

    def _own(self, cls, *names) -> bool:
        """True when ``host_passes``, ``filter_all`` and ``names`` are ``cls``'s,
        i.e. no subclass changed what :meth:`mask` mirrors."""
        mine = type(self)
        return all(
            getattr(mine, n) is getattr(cls, n)
            for n in ('host_passes', 'filter_all', *names)
        )
