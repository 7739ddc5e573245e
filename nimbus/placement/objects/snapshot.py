"""The in-process cache of provider data for GET /allocation_candidates.

:class:`SnapshotCache` keeps one immutable
:class:`~nimbus.placement.candidates.model.Snapshot` and the
``placement_state`` counters it was built at. Each request costs one
one-row SELECT; when ``structure`` moved the snapshot is rebuilt from the
database, when only ``usage`` moved just the usages and generations are
re-read and the snapshot is re-indexed from the cached providers. The
counters are read before the data, so a snapshot is never newer than its
recorded counters claim: at worst the next request rebuilds once more. This
stays correct with any number of API processes on one database.
"""

import threading

import sqlalchemy as sa

from nimbus.placement.candidates import model
from nimbus.placement.db import models as m
from nimbus.placement.objects import base


class SnapshotCache:
    def __init__(self, pdb):
        self.pdb = pdb
        self._lock = threading.Lock()
        self._state = None
        self._snapshot = None
        self._providers = None  # id -> Provider
        self._rc_names = None  # id -> name

    def get(self):
        """The current snapshot (rebuilt or refreshed when stale)."""
        state = self.pdb.state()
        if state == self._state:
            return self._snapshot
        with self._lock:
            if state == self._state:
                return self._snapshot
            if self._state is None or state[0] != self._state[0]:
                self.pdb.read(self._load_all)
            else:
                self.pdb.read(self._load_usage)
            return self._snapshot

    def _load_all(self, conn):
        state = base.read_state(conn)
        rc_names = dict(conn.execute(sa.select(m.RC.c.id, m.RC.c.name)).all())
        trait_names = dict(
            conn.execute(sa.select(m.TRAIT.c.id, m.TRAIT.c.name)).all()
        )
        rows = conn.execute(
            sa.select(
                m.RP.c.id,
                m.RP.c.uuid,
                m.RP.c.name,
                m.RP.c.generation,
                m.RP.c.parent_provider_id,
                m.RP.c.root_provider_id,
            ).order_by(m.RP.c.id)
        ).all()
        uuid_of = {r[0]: r[1] for r in rows}
        invs = {}
        for r in conn.execute(
            sa.select(
                m.INV.c.resource_provider_id,
                m.INV.c.resource_class_id,
                m.INV.c.total,
                m.INV.c.reserved,
                m.INV.c.min_unit,
                m.INV.c.max_unit,
                m.INV.c.step_size,
                m.INV.c.allocation_ratio,
            )
        ):
            invs.setdefault(r[0], {})[rc_names[r[1]]] = model.Inventory(
                r[2], r[3], r[4], r[5], r[6], r[7]
            )
        traits = {}
        for rp_id, trait_id in conn.execute(
            sa.select(m.RPT.c.resource_provider_id, m.RPT.c.trait_id)
        ):
            traits.setdefault(rp_id, set()).add(trait_names[trait_id])
        aggs = {}
        for rp_id, agg in conn.execute(
            sa.select(m.RPA.c.resource_provider_id, m.RPA.c.aggregate_uuid)
        ):
            aggs.setdefault(rp_id, set()).add(agg)
        usages = self._usages(conn, rc_names)
        providers = {}
        for rp_id, uuid, name, gen, parent_id, root_id in rows:
            providers[rp_id] = model.Provider(
                uuid=uuid,
                name=name,
                generation=gen,
                parent_uuid=uuid_of.get(parent_id),
                root_uuid=uuid_of.get(root_id, uuid),
                inventories=invs.get(rp_id, {}),
                usages=usages.get(rp_id, {}),
                traits=frozenset(traits.get(rp_id, ())),
                aggregates=frozenset(aggs.get(rp_id, ())),
            )
        self._providers = providers
        self._rc_names = rc_names
        # in id order: a summary lists custom classes as they were created
        self._snapshot = model.Snapshot(
            providers.values(),
            [rc_names[i] for i in sorted(rc_names)],
            trait_names.values(),
        )
        self._state = state

    @staticmethod
    def _usages(conn, rc_names):
        usages = {}
        for rp_id, rc_id, used in conn.execute(
            sa.select(
                m.ALLOC.c.resource_provider_id,
                m.ALLOC.c.resource_class_id,
                sa.func.sum(m.ALLOC.c.used),
            ).group_by(
                m.ALLOC.c.resource_provider_id, m.ALLOC.c.resource_class_id
            )
        ):
            usages.setdefault(rp_id, {})[rc_names[rc_id]] = int(used)
        return usages

    def _load_usage(self, conn):
        state = base.read_state(conn)
        if state[0] != self._state[0]:
            return self._load_all(conn)
        usages = self._usages(conn, self._rc_names)
        gens = dict(
            conn.execute(sa.select(m.RP.c.id, m.RP.c.generation)).all()
        )
        providers = {}
        for rp_id, p in self._providers.items():
            new_usage = usages.get(rp_id, {})
            gen = gens.get(rp_id, p.generation)
            if new_usage != p.usages or gen != p.generation:
                p = model.Provider(
                    p.uuid,
                    p.name,
                    gen,
                    p.parent_uuid,
                    p.root_uuid,
                    p.inventories,
                    new_usage,
                    p.traits,
                    p.aggregates,
                )
            providers[rp_id] = p
        self._providers = providers
        old = self._snapshot
        new = model.Snapshot(providers.values(), old.rc_sequence, old.traits)
        new.inherit_fragments(old)
        self._snapshot = new
        self._state = state
