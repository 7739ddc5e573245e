"""PCI passthrough: flavor aliases -> device requests -> the host's PCI device pools."""

from __future__ import annotations

import json

from nimbus.scheduler.filters.base import BaseHostFilter, cached


class InvalidPciAlias(ValueError):
    pass


def parse_aliases(alias_opts) -> dict[str, list[dict]]:
    """``[pci] alias`` entries (JSON objects) -> {name: [device spec, ...]}. Several
    entries with one name are alternatives."""
    out: dict[str, list[dict]] = {}
    for raw in alias_opts or []:
        try:
            entries = json.loads(raw)
        except ValueError as exc:
            raise InvalidPciAlias(f'[pci] alias is not JSON: {raw!r}') from exc
        for entry in entries if isinstance(entries, list) else [entries]:
            name = entry.get('name')
            if not name:
                raise InvalidPciAlias(f'[pci] alias without a name: {raw!r}')
            match = {
                k: str(v).lower()
                for k, v in entry.items()
                if k in ('vendor_id', 'product_id', 'device_type')
            }
            out.setdefault(name, []).append(match)
    return out


def parse_requests(
    value: str, aliases: dict
) -> list[tuple[str, list[dict], int]]:
    """``"a1:2,a2"`` -> [("a1", specs, 2), ("a2", specs, 1)]."""
    out = []
    for part in str(value).split(','):
        part = part.strip()
        if not part:
            continue
        name, _, count = part.partition(':')
        name = name.strip()
        if name not in aliases:
            raise InvalidPciAlias(f'unknown PCI alias {name!r}')
        try:
            n = int(count) if count else 1
        except ValueError as exc:
            raise InvalidPciAlias(f'bad PCI alias count in {part!r}') from exc
        out.append((name, aliases[name], n))
    return out


def _pool_matches(pool: dict, spec: dict) -> bool:
    for key, want in spec.items():
        have = pool.get(key)
        if key == 'device_type' and have is None:
            have = pool.get('dev_type')
        if have is None or str(have).lower() != want:
            return False
    return True


def plan(pools: list[dict], requests) -> list[tuple[int, int]] | None:
    """Which pools give how many devices; None when the host cannot satisfy the requests."""
    left = [int(p.get('count', 0)) for p in pools]
    take: dict[int, int] = {}
    for _name, specs, count in requests:
        need = count
        for idx, pool in enumerate(pools):
            if need == 0:
                break
            if left[idx] <= 0 or not any(
                _pool_matches(pool, s) for s in specs
            ):
                continue
            n = min(need, left[idx])
            left[idx] -= n
            need -= n
            take[idx] = take.get(idx, 0) + n
        if need:
            return None
    return sorted(take.items())


def pci_requests(spec, conf) -> list:
    """Parsed PCI requests of this request (cached); [] when the flavor asks for none."""

    def compute():
        value = spec.flavor.extra_specs.get('pci_passthrough:alias')
        if not value:
            return []
        return parse_requests(value, parse_aliases(conf.pci.alias))

    return cached(spec, 'pci_requests', compute)


def requested_count(spec, conf) -> int:
    try:
        return sum(n for _a, _s, n in pci_requests(spec, conf))
    except InvalidPciAlias:
        return 0


class PciPassthroughFilter(BaseHostFilter):
    """Passes hosts whose PCI device pools can supply the devices the flavor asks for.

    Reads: flavor ``pci_passthrough:alias`` (``"name:count[,name:count]"``), aliases from
    ``[pci] alias`` (JSON with ``name``, ``vendor_id``, ``product_id``, ``device_type``),
    ``host_state.pci_pools`` (``[{"vendor_id", "product_id", "dev_type", "count",
    "numa_node"}]``). Example: alias ``{"name": "nic", "vendor_id": "8086", "product_id":
    "154d"}`` and flavor ``pci_passthrough:alias=nic:2`` need two free such devices.
    """

    def _requests(self, spec):
        try:
            return pci_requests(spec, self.conf)
        except InvalidPciAlias as exc:
            return exc

    def is_enabled_for(self, spec):
        return bool(spec.flavor.extra_specs.get('pci_passthrough:alias'))

    def host_passes(self, host_state, spec):
        reqs = self._requests(spec)
        if isinstance(reqs, InvalidPciAlias):
            return False
        return plan(host_state.pci_pools, reqs) is not None

    def reject_reason(self, host_state, spec):
        reqs = self._requests(spec)
        if isinstance(reqs, InvalidPciAlias):
            return str(reqs)
        want = ', '.join(f'{n}x {a}' for a, _s, n in reqs)
        return f'needs {want}, host has {host_state.pci_device_count()} free PCI devices'
