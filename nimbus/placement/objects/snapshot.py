"""The in-process cache of provider data for GET /allocation_candidates.

:class:`SnapshotCache` keeps one immutable
:class:`~nimbus.placement.candidates.model.Snapshot` and the
``placement_state`` counters it was built at. Each request costs one
one-row SELECT; when only ``usage`` moved just the usages and generations
are re-read and the snapshot is re-indexed from the cached providers.

When ``structure`` moved (a provider created, deleted, renamed or moved,
an inventory, trait or aggregate written) the snapshot follows the change
instead of reloading everything: the provider rows (id, name, generation,
parent, root), the aggregate links and the resource class and trait names
are read whole (small), and only the providers whose row differs from the
cached one get their inventories and traits read again. Every inventory
and trait write moves its provider's generation in the same transaction,
so a provider whose row is unchanged has the inventories and traits the
cache holds (aggregates are read whole: before 1.19 their writes keep the
generation). That takes provider ids never given twice (the table's
AUTOINCREMENT on SQLite, migration 0002): a provider deleted and created
again under the same uuid, name and parent, written back to the same
generation, gets a new id and is read again. A renamed or deleted resource class or trait, or more changed
providers than :data:`DELTA_LIMIT`, reloads everything. At 1000 simulated
hosts starting their accelerator agents, each device report was a
structure write and the next listing of providers reloaded about 3000
providers with their inventories, traits and usages.

The counters are read before the data, so a snapshot is never newer than
its recorded counters claim: at worst the next request reloads once more.
This stays correct with any number of API processes on one database.
"""

import threading

import sqlalchemy as sa

from nimbus.placement.candidates import model
from nimbus.placement.db import models as m
from nimbus.placement.objects import inventory
from nimbus.placement.objects import base

# More changed providers than this (or than an eighth of them all) and a
# structure change reloads everything: one read of each table is cheaper
# than long IN lists.
DELTA_LIMIT = 256
# Ids per IN list (SQLite allows 999 bound parameters in old builds).
_CHUNK = 500

_RP_ROWS = sa.select(
    m.RP.c.id,
    m.RP.c.uuid,
    m.RP.c.name,
    m.RP.c.generation,
    m.RP.c.parent_provider_id,
    m.RP.c.root_provider_id,
).order_by(m.RP.c.id)
_INVENTORIES = sa.select(
    m.INV.c.resource_provider_id,
    m.INV.c.resource_class_id,
    *inventory.CAPACITY_COLUMNS,
)
_TRAITS = sa.select(m.RPT.c.resource_provider_id, m.RPT.c.trait_id)


class SnapshotCache:
    def __init__(self, pdb):
        self.pdb = pdb
        self._lock = threading.Lock()
        self._state = None
        self._snapshot = None
        self._providers = None  # id -> Provider
        self._rc_names = None  # id -> name
        self._trait_names = None  # id -> name
        # ({uuid: id}, {rc name: id}) of the providers and classes above,
        # built at the first claim after a structure change (claim_view)
        self._claim_ids = None
        # How the snapshot was last brought up to date: 'all', 'structure'
        # (the changed providers only) or 'usage' (tests and logs).
        self.loads = {'all': 0, 'structure': 0, 'usage': 0}

    def get(self):
        """The current snapshot (reloaded or followed when stale)."""
        state = self.pdb.state()
        if state == self._state:
            return self._snapshot
        with self._lock:
            if state == self._state:
                return self._snapshot
            if self._state is None:
                self.pdb.read(self._load_all)
            elif state[0] != self._state[0]:
                self.pdb.read(self._load_structure)
            else:
                self.pdb.read(self._load_usage)
            return self._snapshot

    def claim_view(self):
        """What a claim may check against instead of reading the
        database (:class:`~nimbus.placement.objects.claim.View`): the
        counters, the providers and class ids of the current snapshot;
        None before the first load."""
        from nimbus.placement.objects import claim

        with self._lock:
            state, providers = self._state, self._providers
            if state is None:
                return None
            ids = self._claim_ids
            if ids is None:
                ids = self._claim_ids = (
                    {p.uuid: rp_id for rp_id, p in providers.items()},
                    {name: i for i, name in self._rc_names.items()},
                )
        return claim.View(state, ids[0], providers, ids[1])

    def note_usage(self, counters, changes):
        """An allocation write of this process committed, leaving
        ``changes`` (``{rp_id: (generation, {rc_id: used})}`` of every
        provider it touched) at ``counters``. When the snapshot was at the
        counters just before that write (no other write in between, in
        any process), it moves to ``counters`` with those providers
        changed, instead of re-reading every usage at the next request;
        otherwise nothing changes (the next request reloads)."""
        with self._lock:
            state = self._state
            if (
                state is None
                or counters[0] != state[0]
                or counters[1] != state[1] + 1
            ):
                return False
            rc_names = self._rc_names
            providers = dict(self._providers)
            changed = []
            for rp_id, (generation, used) in changes.items():
                p = providers.get(rp_id)
                if p is None or any(rc not in rc_names for rc in used):
                    return False
                usages = {rc_names[rc]: n for rc, n in used.items() if n}
                if usages != p.usages or generation != p.generation:
                    providers[rp_id] = _with_usage(p, generation, usages)
                    changed.append(providers[rp_id])
            self._follow_usage(providers, changed, counters)
            return True

    def _follow_usage(self, providers, changed, state):
        """The snapshot at ``state``, where only the usages and
        generations of ``changed`` (Provider objects of ``providers``)
        moved: the indexes that do not depend on usage are kept."""
        self._providers = providers
        if changed:
            self._snapshot = self._snapshot.with_usages(changed)
        self._state = state

    def _swap(self, providers, state, rc_sequence, traits):
        """Index ``providers`` into the new snapshot at ``state``, keeping
        the serialised summaries of the unchanged ones (when the resource
        classes, which order the summaries, are the same)."""
        self._providers = providers
        self._claim_ids = None
        old = self._snapshot
        new = model.Snapshot(providers.values(), rc_sequence, traits)
        if new.rc_sequence == old.rc_sequence:
            new.inherit_fragments(old)
        self._snapshot = new
        self._state = state

    @staticmethod
    def _names(conn):
        """``({rc id: name}, {trait id: name})``."""
        return (
            dict(conn.execute(sa.select(m.RC.c.id, m.RC.c.name)).all()),
            dict(conn.execute(sa.select(m.TRAIT.c.id, m.TRAIT.c.name)).all()),
        )

    def _load_all(self, conn, state=None, names=None, rows=None):
        self.loads['all'] += 1
        if state is None:
            state = base.read_state(conn)
        rc_names, trait_names = names or self._names(conn)
        if rows is None:
            rows = conn.execute(_RP_ROWS).all()
        uuid_of = {r[0]: r[1] for r in rows}
        invs = _inventories(conn, rc_names)
        traits = _traits(conn, trait_names)
        aggs = _aggregates(conn)
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
                aggregates=aggs.get(rp_id, frozenset()),
            )
        self._providers = providers
        self._rc_names = rc_names
        self._trait_names = trait_names
        self._claim_ids = None
        # in id order: a summary lists custom classes, and a provider its
        # traits, as they were created (as Placement's database reads them)
        self._snapshot = model.Snapshot(
            providers.values(),
            [rc_names[i] for i in sorted(rc_names)],
            [trait_names[i] for i in sorted(trait_names)],
        )
        self._state = state

    def _load_structure(self, conn):
        """Follow a structure change: read again only the providers whose
        row moved (see the module's docstring)."""
        state = base.read_state(conn)
        if state[0] == self._state[0]:
            return self._load_usage(conn)
        rc_names, trait_names = names = self._names(conn)
        rows = conn.execute(_RP_ROWS).all()
        old = self._providers
        uuid_of = {r[0]: r[1] for r in rows}
        changed = [
            r[0] for r in rows if not _same_row(old.get(r[0]), r, uuid_of)
        ]
        if (
            not _extends(self._rc_names, rc_names)
            or not _extends(self._trait_names, trait_names)
            or len(changed) > min(DELTA_LIMIT, max(16, len(rows) // 8))
        ):
            return self._load_all(conn, state, names, rows)
        self.loads['structure'] += 1
        invs = _inventories(conn, rc_names, changed)
        traits = _traits(conn, trait_names, changed)
        aggs = _aggregates(conn)
        usages = None
        if state[1] != self._state[1]:
            usages = self._usages(conn, rc_names)
        changed = set(changed)
        providers = {}
        for rp_id, uuid, name, gen, parent_id, root_id in rows:
            p = old.get(rp_id)
            if usages is not None:
                used = usages.get(rp_id, {})
            else:
                used = p.usages if p is not None else {}
            agg = aggs.get(rp_id, frozenset())
            if rp_id in changed:
                p = model.Provider(
                    uuid,
                    name,
                    gen,
                    uuid_of.get(parent_id),
                    uuid_of.get(root_id, uuid),
                    invs.get(rp_id, {}),
                    used,
                    frozenset(traits.get(rp_id, ())),
                    agg,
                )
            elif used != p.usages or agg != p.aggregates:
                p = model.Provider(
                    p.uuid,
                    p.name,
                    p.generation,
                    p.parent_uuid,
                    p.root_uuid,
                    p.inventories,
                    used,
                    p.traits,
                    agg,
                )
            providers[rp_id] = p
        self._rc_names = rc_names
        self._trait_names = trait_names
        self._swap(
            providers,
            state,
            [rc_names[i] for i in sorted(rc_names)],
            [trait_names[i] for i in sorted(trait_names)],
        )

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
            return self._load_structure(conn)
        self.loads['usage'] += 1
        usages = self._usages(conn, self._rc_names)
        gens = dict(
            conn.execute(sa.select(m.RP.c.id, m.RP.c.generation)).all()
        )
        providers = {}
        changed = []
        for rp_id, p in self._providers.items():
            new_usage = usages.get(rp_id, {})
            gen = gens.get(rp_id, p.generation)
            if new_usage != p.usages or gen != p.generation:
                p = _with_usage(p, gen, new_usage)
                changed.append(p)
            providers[rp_id] = p
        self._follow_usage(providers, changed, state)


def _chunks(ids):
    ids = list(ids)
    for i in range(0, len(ids), _CHUNK):
        yield ids[i : i + _CHUNK]


def _rows_of(conn, stmt, column, ids):
    """The rows of ``stmt``: all of them (``ids`` None) or those whose
    ``column`` is one of ``ids``."""
    if ids is None:
        yield from conn.execute(stmt)
        return
    for chunk in _chunks(ids):
        yield from conn.execute(stmt.where(column.in_(chunk)))


def _inventories(conn, rc_names, ids=None):
    """``{rp_id: {rc name: Inventory}}`` (of ``ids``, or of all)."""
    invs = {}
    for r in _rows_of(conn, _INVENTORIES, m.INV.c.resource_provider_id, ids):
        invs.setdefault(r[0], {})[rc_names[r[1]]] = model.Inventory(
            r[2], r[3], r[4], r[5], r[6], r[7]
        )
    return invs


def _traits(conn, trait_names, ids=None):
    """``{rp_id: {trait name}}`` (of ``ids``, or of all)."""
    traits = {}
    for rp_id, trait_id in _rows_of(
        conn, _TRAITS, m.RPT.c.resource_provider_id, ids
    ):
        traits.setdefault(rp_id, set()).add(trait_names[trait_id])
    return traits


def _aggregates(conn):
    """``{rp_id: frozenset of aggregate uuids}`` of every provider."""
    aggs = {}
    for rp_id, agg in conn.execute(
        sa.select(m.RPA.c.resource_provider_id, m.RPA.c.aggregate_uuid)
    ):
        aggs.setdefault(rp_id, set()).add(agg)
    return {rp_id: frozenset(v) for rp_id, v in aggs.items()}


def _same_row(p, row, uuid_of):
    """True when the cached Provider ``p`` has the provider ``row``'s
    uuid, name, generation, parent and root."""
    if p is None:
        return False
    _id, uuid, name, gen, parent_id, root_id = row
    return (
        p.generation == gen
        and p.uuid == uuid
        and p.name == name
        and p.parent_uuid == uuid_of.get(parent_id)
        and p.root_uuid == uuid_of.get(root_id, uuid)
    )


def _extends(old, new):
    """True when every id of ``old`` is in ``new`` with the same name
    (names were only added)."""
    return all(new.get(i) == name for i, name in old.items())


def _with_usage(p, generation, usages):
    return model.Provider(
        p.uuid,
        p.name,
        generation,
        p.parent_uuid,
        p.root_uuid,
        p.inventories,
        usages,
        p.traits,
        p.aggregates,
    )
