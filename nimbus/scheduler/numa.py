"""NUMA topology: host cells, the instance's requested cells, and packing one onto the other.

Host topology (compute node ``numa_topology``)::

    {"cells": [{"id": 0, "cpuset": [0, 1, 2, 3], "pcpuset": [4, 5, 6, 7], "memory": 16384,
                "cpu_usage": 0, "memory_usage": 0, "pinned_cpus": []}, ...]}

``cpuset`` are CPUs for floating (shared) guests, ``pcpuset`` CPUs for pinned guests.

Instance topology comes from flavor extra specs (``hw:numa_nodes``, ``hw:cpu_policy``,
``hw:numa_cpus.N``, ``hw:numa_mem.N``) or, when the flavor does not set them, from image
properties (``hw_numa_nodes``, ``hw_cpu_policy``, ``hw_numa_cpus.N``, ``hw_numa_mem.N``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from nimbus.extra_specs import cpuset


class InvalidNUMARequest(ValueError):
    pass


class NUMACell:
    __slots__ = (
        'id',
        'cpuset',
        'pcpuset',
        'memory',
        'cpu_usage',
        'memory_usage',
        'pinned_cpus',
    )

    def __init__(
        self,
        id,
        cpuset=(),
        pcpuset=(),
        memory=0,
        cpu_usage=0,
        memory_usage=0,
        pinned_cpus=(),
    ):
        self.id = id
        self.cpuset = frozenset(cpuset)
        self.pcpuset = frozenset(pcpuset)
        self.memory = memory
        self.cpu_usage = cpu_usage
        self.memory_usage = memory_usage
        self.pinned_cpus = set(pinned_cpus)

    @property
    def free_pcpus(self) -> set:
        return set(self.pcpuset) - self.pinned_cpus

    def to_dict(self) -> dict:
        return {
            'id': self.id,
            'cpuset': sorted(self.cpuset),
            'pcpuset': sorted(self.pcpuset),
            'memory': self.memory,
            'cpu_usage': self.cpu_usage,
            'memory_usage': self.memory_usage,
            'pinned_cpus': sorted(self.pinned_cpus),
        }


def host_cells_from_dict(topology) -> list[NUMACell]:
    cells = (
        topology.get('cells', []) if isinstance(topology, dict) else topology
    )
    return [
        NUMACell(
            c.get('id', i),
            c.get('cpuset', ()),
            c.get('pcpuset', ()),
            int(c.get('memory', 0)),
            int(c.get('cpu_usage', 0)),
            int(c.get('memory_usage', 0)),
            c.get('pinned_cpus', ()),
        )
        for i, c in enumerate(cells)
    ]


@dataclass
class InstanceCell:
    id: int
    cpus: int
    memory: int
    dedicated: bool = False


@dataclass
class InstanceTopology:
    cells: list = field(default_factory=list)

    @property
    def dedicated(self) -> bool:
        return any(c.dedicated for c in self.cells)


def _setting(spec, flavor_key: str, image_key: str):
    value = spec.flavor.extra_specs.get(flavor_key)
    if value is None:
        value = spec.image_props.get(image_key)
    return value


def instance_topology(spec) -> InstanceTopology | None:
    """The NUMA cells the request needs, or None when it asks for no topology."""
    nodes = _setting(spec, 'hw:numa_nodes', 'hw_numa_nodes')
    policy = _setting(spec, 'hw:cpu_policy', 'hw_cpu_policy') or 'shared'
    dedicated = str(policy).lower() == 'dedicated'
    if nodes is None and not dedicated:
        return None
    try:
        n = int(nodes) if nodes is not None else 1
    except ValueError as exc:
        raise InvalidNUMARequest(
            f'hw:numa_nodes must be an integer, got {nodes!r}'
        ) from exc
    if n < 1:
        raise InvalidNUMARequest('hw:numa_nodes must be at least 1')
    vcpus, memory = spec.flavor.vcpus, spec.flavor.memory_mb
    explicit_cpus, explicit_mem = {}, {}
    for i in range(n):
        c = _setting(spec, f'hw:numa_cpus.{i}', f'hw_numa_cpus.{i}')
        m = _setting(spec, f'hw:numa_mem.{i}', f'hw_numa_mem.{i}')
        if c is not None:
            try:
                explicit_cpus[i] = len(cpuset.parse_cpu_spec(c))
            except cpuset.InvalidCPUSpec as exc:
                raise InvalidNUMARequest(str(exc)) from exc
        if m is not None:
            explicit_mem[i] = int(m)
    cells = []
    if explicit_cpus or explicit_mem:
        if len(explicit_cpus) != n or len(explicit_mem) != n:
            raise InvalidNUMARequest(
                'hw:numa_cpus.N and hw:numa_mem.N must cover every node'
            )
        if (
            sum(explicit_cpus.values()) != vcpus
            or sum(explicit_mem.values()) != memory
        ):
            raise InvalidNUMARequest(
                "per-node CPUs/memory must add up to the flavor's"
            )
        for i in range(n):
            cells.append(
                InstanceCell(i, explicit_cpus[i], explicit_mem[i], dedicated)
            )
    else:
        if vcpus % n or memory % n:
            raise InvalidNUMARequest(
                f'{vcpus} vCPUs / {memory} MB cannot be split evenly over {n} NUMA nodes'
            )
        for i in range(n):
            cells.append(InstanceCell(i, vcpus // n, memory // n, dedicated))
    return InstanceTopology(cells)


def _cell_fits(
    hc: NUMACell, ic: InstanceCell, cpu_ratio: float, ram_ratio: float
):
    """None if it does not fit, else the pinned CPUs to use (empty set when shared)."""
    if hc.memory_usage + ic.memory > hc.memory * ram_ratio:
        return None
    if ic.dedicated:
        free = hc.pcpuset - hc.pinned_cpus
        if len(free) < ic.cpus:
            return None
        return frozenset(sorted(free)[: ic.cpus])
    if (
        ic.cpus > len(hc.cpuset)
        or hc.cpu_usage + ic.cpus > len(hc.cpuset) * cpu_ratio
    ):
        return None
    return frozenset()


def fit(
    host_cells: list[NUMACell],
    topo: InstanceTopology,
    cpu_ratio: float,
    ram_ratio: float,
):
    """Pack the instance cells onto distinct host cells. Returns a list of
    ``(host_cell_index, instance_cell, pinned_cpus)`` or None."""
    k = len(topo.cells)
    if not host_cells or k > len(host_cells):
        return None
    # per instance cell, the host cells it fits in (independently)
    options = []
    for ic in topo.cells:
        opts = {}
        for idx, hc in enumerate(host_cells):
            pins = _cell_fits(hc, ic, cpu_ratio, ram_ratio)
            if pins is not None:
                opts[idx] = pins
        if not opts:
            return None
        options.append(opts)
    for perm in itertools.permutations(range(len(host_cells)), k):
        if all(perm[i] in options[i] for i in range(k)):
            return [
                (perm[i], topo.cells[i], options[i][perm[i]]) for i in range(k)
            ]
    return None


def explain_misfit(
    host_cells: list[NUMACell],
    topo: InstanceTopology,
    cpu_ratio: float,
    ram_ratio: float,
) -> str:
    k = len(topo.cells)
    if not host_cells:
        return 'host has no NUMA topology'
    if k > len(host_cells):
        return f'needs {k} NUMA cells, host has {len(host_cells)}'
    ic = max(topo.cells, key=lambda c: c.cpus)
    if topo.dedicated:
        free = sorted(
            (len(hc.pcpuset - hc.pinned_cpus) for hc in host_cells),
            reverse=True,
        )
        cells = 'cell' if k == 1 else 'cells'
        have = (
            f'host has {free[0]} free'
            if len(free) == 1
            else f'host cells have {", ".join(map(str, free))} free'
        )
        return f'needs {k} {cells} of {ic.cpus} pinned CPUs, {have}'
    mem = max(c.memory for c in topo.cells)
    best_mem = max(
        hc.memory * ram_ratio - hc.memory_usage for hc in host_cells
    )
    best_cpu = max(
        len(hc.cpuset) * cpu_ratio - hc.cpu_usage for hc in host_cells
    )
    return (
        f'needs {k} cells of {ic.cpus} vCPUs/{mem} MB, best host cell has '
        f'{best_cpu:g} vCPUs/{best_mem:g} MB free'
    )


def apply_fit(host_cells: list[NUMACell], placement) -> None:
    for idx, ic, pins in placement:
        hc = host_cells[idx]
        hc.memory_usage += ic.memory
        hc.cpu_usage += ic.cpus
        if pins:
            hc.pinned_cpus |= set(pins)
