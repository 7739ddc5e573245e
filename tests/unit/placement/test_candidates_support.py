"""Builders shared by the candidate engine tests."""
import types
import uuid as uuidlib

from nimbus.placement.candidates import Inventory, Provider, Snapshot

RCS = ['VCPU', 'MEMORY_MB', 'DISK_GB', 'CUSTOM_PGPU', 'SRIOV_NET_VF']
TRAITS = ['T1', 'T2', 'T3', 'HW_CPU_X86_AVX2', 'CUSTOM_FAST',
          'MISC_SHARES_VIA_AGGREGATE', 'HW_NUMA_ROOT']
AGG1 = str(uuidlib.UUID(int=0xA1))
AGG2 = str(uuidlib.UUID(int=0xA2))
AGG3 = str(uuidlib.UUID(int=0xA3))


def u(n):
    """A readable deterministic uuid."""
    return str(uuidlib.UUID(int=n))


def opts(strategy='depth-first', max_ac=-1, randomize=False, rng=None):
    return types.SimpleNamespace(
        max_allocation_candidates=max_ac,
        randomize_allocation_candidates=randomize,
        allocation_candidates_generation_strategy=strategy, rng=rng)


class TreeBuilder:
    """Small DSL: ``b.add(1, inv={'VCPU': 4}, parent=None, traits=...)``."""

    def __init__(self):
        self.provs = {}

    def add(self, n, parent=None, inv=None, used=None, traits=(), aggs=(),
            **_):
        uuid = u(n)
        root = uuid if parent is None else self.provs[u(parent)].root_uuid
        inventories = {}
        for rc, spec in (inv or {}).items():
            if isinstance(spec, Inventory):
                inventories[rc] = spec
            else:
                inventories[rc] = Inventory(spec)
        self.provs[uuid] = Provider(
            uuid=uuid, name='rp%d' % n, generation=0,
            parent_uuid=None if parent is None else u(parent),
            root_uuid=root, inventories=inventories, usages=dict(used or {}),
            traits=frozenset(traits), aggregates=frozenset(aggs))
        return uuid

    def snapshot(self):
        return Snapshot(list(self.provs.values()), RCS, TRAITS)
