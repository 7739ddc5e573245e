"""Filters that compare the request with what the host reports about itself:
ComputeCapabilitiesFilter, ImagePropertiesFilter."""

from __future__ import annotations

import json

import numpy as np

from nimbus.scheduler.filters.base import BaseHostFilter, cached
from nimbus.extra_specs import image_fit
from nimbus.extra_specs.ops import Requirement
from nimbus.scheduler.host_state import HostState

HOST_ATTRIBUTES = HostState.ATTRIBUTES - {'_agg_min_cache', 'static_memo'}
# Past this many remembered verdicts a host forgets them all (one per
# distinct flavor or image judged, so rarely).
MEMO_LIMIT = 512


def resolve(host_state, path):
    """Walk ``path`` (['cpu_info', 'features']) through attributes, then dict keys.
    A top-level name that is no attribute, or whose attribute is None, is looked up in
    ``host_state.stats`` (what the compute reports as stats). None if missing."""
    first = path[0]
    value = (
        getattr(host_state, first, None) if first in HOST_ATTRIBUTES else None
    )
    if value is None:
        value = (host_state.stats or {}).get(first)
    for part in path[1:]:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                return None
        if isinstance(value, dict):
            value = value.get(part)
        else:
            value = getattr(value, part, None)
        if value is None:
            return None
    return value


def capability_requirements(extra_specs: dict) -> list:
    """(path, Requirement, stats_only) for each extra spec this filter checks:
    ``capabilities:a:b`` -> ['a', 'b']; an unscoped key that names a HostState attribute
    (``free_ram_mb``) -> that attribute; any other unscoped key -> the host's ``stats``
    of that name, checked only on hosts that report it (``stats_only``; as Nova, which
    ignores an unscoped key a host has neither as attribute nor in its stats). Other
    scopes are ignored."""
    out = []
    for key, value in extra_specs.items():
        parts = key.split(':')
        if len(parts) > 1:
            if parts[0] != 'capabilities' or len(parts) < 2:
                continue
            out.append((parts[1:], Requirement(value), False))
        else:
            out.append((parts, Requirement(value), key not in HOST_ATTRIBUTES))
    return out


def _applies(host_state, path, stats_only):
    return not stats_only or path[0] in (host_state.stats or {})


def _is_static(path) -> bool:
    """True when :func:`resolve` reads only the host's static facts for
    ``path``: a static attribute, or ``stats`` (where a name that is no
    attribute, or a None attribute, is looked up)."""
    return path[0] in HostState.STATIC_FACTS or path[0] not in HOST_ATTRIBUTES


def _satisfies(host_state, reqs) -> bool:
    for path, req, stats_only in reqs:
        if stats_only and path[0] not in (host_state.stats or {}):
            continue
        if not req.matches(resolve(host_state, path)):
            return False
    return True


def remembered(host_state, key, judge) -> bool:
    """``judge(host_state)``, remembered on the host under ``key`` until its
    static facts change. Only for verdicts that read static facts alone."""
    memo = host_state.static_memo
    verdict = memo.get(key)
    if verdict is None:
        if len(memo) >= MEMO_LIMIT:
            memo.clear()
        verdict = memo[key] = judge(host_state)
    return verdict


def _remembered_passes(hosts, key, judge) -> list:
    """The hosts whose :func:`remembered` verdict is True, in order: the
    remembered verdicts are read in one pass, and only the hosts without
    one are judged."""
    verdicts = [h.static_memo.get(key) for h in hosts]
    return [
        h
        for h, v in zip(hosts, verdicts, strict=False)
        if (v if v is not None else remembered(h, key, judge))
    ]


def _remembered_mask(table, slots, key, judge):
    """:func:`_remembered_passes` as a bool array over table rows: the
    table's remembered verdicts, the hosts without one judged (and
    remembered, on the host and in the table)."""
    col = table.memo_column(key, MEMO_LIMIT)
    verdicts = col[slots]
    todo = np.flatnonzero(verdicts < 0)
    if len(todo):
        rows = slots[todo]
        got = [bool(remembered(h, key, judge)) for h in table.hosts_at(rows)]
        col[rows] = got
        verdicts[todo] = got
    return verdicts.astype(bool)


class ComputeCapabilitiesFilter(BaseHostFilter):
    """Checks the flavor's extra specs against the host's capabilities.

    Reads: ``flavor.extra_specs`` keys scoped ``capabilities:`` (``capabilities:cpu_info:
    features``, ``capabilities:hypervisor_type``) and unscoped keys naming a HostState
    attribute (``free_ram_mb``, ``num_instances``, ``vcpus_total``...) or, failing that,
    one of the host's ``stats`` (hosts without that stat ignore the key). A name that is
    no attribute (or is None) is looked up in ``stats`` for scoped keys too. Values use
    the operator language of ``nimbus.extra_specs.ops`` (default ``s==``). Options: none.
    Example: ``capabilities:cpu_info:features = <all-in> aes avx`` keeps hosts whose CPU has
    both flags; ``capabilities:hypervisor_version = >= 6000000``; ``gpu_model = s== t4``
    with a compute reporting stats ``{"gpu_model": "t4"}``.

    Runs for every instance of a multi-create (on the host that took the previous one):
    a key such as ``free_ram_mb`` or ``num_instances`` changes as instances land.
    """

    def _reqs(self, spec):
        return cached(
            spec,
            'capabilities_reqs',
            lambda: capability_requirements(spec.flavor.extra_specs),
        )

    def is_enabled_for(self, spec):
        return bool(self._reqs(spec))

    def host_passes(self, host_state, spec):
        return _satisfies(host_state, self._reqs(spec))

    def _split(self, spec):
        """(memo key, static requirements, the others): a host's verdict on
        the static ones (CPU flags, hypervisor, stats) holds until its
        compute node record changes, so the batch path remembers it per
        host; ``free_ram_mb`` and the like are judged every time."""

        def compute():
            reqs = self._reqs(spec)
            static = [r for r in reqs if _is_static(r[0])]
            key = ('capabilities',) + tuple(
                (tuple(path), req.text, stats_only)
                for path, req, stats_only in static
            )
            return key, static, [r for r in reqs if not _is_static(r[0])]

        return cached(spec, 'capabilities_split', compute)

    def mask(self, table, slots, spec):
        key, static, dynamic = self._split(spec)
        if dynamic or not self._own(ComputeCapabilitiesFilter):
            return None

        def judge(h):
            return _satisfies(h, static)

        return _remembered_mask(table, slots, key, judge)

    def filter_all(self, hosts, spec):
        key, static, dynamic = self._split(spec)

        def judge(h):
            return _satisfies(h, static)

        if static:
            hosts = _remembered_passes(hosts, key, judge)
        if dynamic:
            hosts = [h for h in hosts if _satisfies(h, dynamic)]
        return hosts

    def reject_reason(self, host_state, spec):
        for path, req, stats_only in self._reqs(spec):
            if not _applies(host_state, path, stats_only):
                continue
            value = resolve(host_state, path)
            if not req.matches(value):
                where = 'stats ' if stats_only else ''
                return (
                    f'{where}{":".join(path)} is {value!r}, needs {req.text!r}'
                )
        return 'passes'


class ImagePropertiesFilter(BaseHostFilter):
    """Passes hosts that can run the image: its architecture (``hw_architecture``),
    hypervisor type (``img_hv_type``), VM mode (``hw_vm_mode``) must appear together in
    one of the host's ``supported_instances`` triples, and ``img_hv_requested_version``
    (operator language, e.g. ``>= 6000000``) must match ``hypervisor_version``.

    Reads: ``spec.image.properties``, ``host_state.supported_instances``,
    ``host_state.hypervisor_version``. Options: none.
    Example: an image with ``hw_architecture=aarch64`` skips x86_64-only hosts.
    """

    run_filter_once_per_request = True

    def _wanted(self, spec):
        return cached(
            spec,
            'image_props_wanted',
            lambda: image_fit.wanted(spec.image_props),
        )

    def is_enabled_for(self, spec):
        arch, hv, mode, version = self._wanted(spec)
        return bool(arch or hv or mode or version)

    def filter_all(self, hosts, spec):
        # Everything this filter reads is a static fact of the host.
        arch, hv, mode, version = wanted = self._wanted(spec)
        key = ('image', arch, hv, mode, version.text if version else None)

        def judge(h):
            return self._passes(h, wanted)

        return _remembered_passes(hosts, key, judge)

    def host_passes(self, host_state, spec):
        return self._passes(host_state, self._wanted(spec))

    def mask(self, table, slots, spec):
        if not self._own(ImagePropertiesFilter):
            return None
        arch, hv, mode, version = wanted = self._wanted(spec)
        key = ('image', arch, hv, mode, version.text if version else None)
        return _remembered_mask(
            table, slots, key, lambda h: self._passes(h, wanted)
        )

    @staticmethod
    def _passes(host_state, wanted):
        return image_fit.fits(
            wanted,
            host_state.supported_instances,
            host_state.hypervisor_version,
        )

    def reject_reason(self, host_state, spec):
        return image_fit.reject_reason(
            self._wanted(spec),
            host_state.supported_instances,
            host_state.hypervisor_version,
        )
