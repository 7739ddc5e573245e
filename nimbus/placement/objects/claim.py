"""The claim of a new consumer, checked against the snapshot it was chosen on.

A claim (PUT /allocations/{consumer} of a consumer placement has never
seen: what a boot sends) through :func:`nimbus.placement.objects.
allocation.replace_noting` costs about fifteen statements: the counter
bump, the consumer and its old allocations, the providers' ids and
generations, their inventories and usages, the insert, the generation
compare-and-swap, the consumer (its type, then the row), and three reads
of what the write left for the snapshot cache.

The process's snapshot (:class:`~nimbus.placement.objects.snapshot.
SnapshotCache`) already holds the providers' ids, generations,
inventories and usages at the ``placement_state`` counters it was read
at. Every write that changes them moves those counters in its own
transaction, and the snapshot's data were read after its counters, so
when the database's counters are still exactly the snapshot's, under the
counter row lock, the snapshot is the database: no row needs reading
again. :func:`claim_noting` then runs

1. one conditional UPDATE that bumps the counters only if they are the
   snapshot's, and (MariaDB/MySQL, one provider) compares-and-swaps that
   provider's generation in the same statement (elsewhere a second
   statement does, as :func:`allocation._increment_generations`);
2. one read: does the consumer, or any allocation of it, exist?
3. the INSERT of the allocations and 4. the INSERT of the consumer,

with the capacity, min/max/step and existence checks done in Python on
the snapshot's figures (the same arithmetic as ``_check_capacity``), and
answers the snapshot cache's note (counters and each touched provider's
generation and usages) without reading it back.

Anything else takes the ordinary path, in the same transaction (nothing
was changed yet): counters not the snapshot's (another write came first),
a consumer generation expected, a provider, class or inventory the
snapshot lacks, a check the snapshot says fails (the ordinary path gives
the error from the database's figures), several consumers, no
allocations. A consumer that turns out to exist (a re-sent claim, a
move) is found after step 1 changed the counters: :class:`Declined` is
raised, the transaction rolls back, and the caller runs the ordinary
write. Nothing the database ends with differs from the ordinary path's:
the same rows, the same generations bumped once, the same counters.
"""

import sqlalchemy as sa

from nimbus.placement.db import models as m
from nimbus.placement.objects import allocation
from nimbus.placement.objects import base
from nimbus.placement.objects import statements


class Declined(Exception):
    """The fast claim changed rows before finding it cannot go on: roll
    back and write through the ordinary path."""


class View:
    """What the snapshot cache knew at one moment (see
    :meth:`SnapshotCache.claim_view`): its counters, ``{uuid: rp_id}``,
    ``{rp_id: Provider}`` and ``{rc name: rc id}`` (the cache's own,
    never changed in place: it replaces them)."""

    __slots__ = ('state', 'ids', 'providers', 'rc_ids')

    def __init__(self, state, ids, providers, rc_ids):
        self.state = state
        self.ids = ids
        self.providers = providers
        self.rc_ids = rc_ids


_CONDITIONAL_BUMP = statements.fast(
    m.STATE.update()
    .where(m.STATE.c.id == 1)
    .where(m.STATE.c.structure == sa.bindparam('b_structure'))
    .where(m.STATE.c.usage == sa.bindparam('b_usage'))
    .values(usage=m.STATE.c.usage + 1)
)
# MariaDB/MySQL: the bump and one provider's generation compare-and-swap
# in one statement; STRAIGHT_JOIN locks the counter row first, as every
# writer does (base.take_counter_lock). 2 rows matched, or 0 and nothing
# changed.
_CONDITIONAL_BUMP_ONE = statements.fast(
    sa.text(
        'UPDATE %s AS s STRAIGHT_JOIN %s AS rp '
        'SET s.usage = s.usage + 1, rp.generation = :b_new '
        'WHERE s.id = 1 AND s.structure = :b_structure '
        'AND s.usage = :b_usage AND rp.id = :b_id '
        'AND rp.generation = :b_expected' % (m.STATE.name, m.RP.name)
    )
)
_SEEN = statements.fast(
    sa.select(sa.literal_column('1')).where(
        sa.or_(
            sa.exists().where(m.CONSUMER.c.uuid == sa.bindparam('b_uuid')),
            sa.exists().where(m.ALLOC.c.consumer_id == sa.bindparam('b_uuid')),
        )
    )
)
_INSERT_ALLOCATIONS = statements.fast(m.ALLOC.insert())
_INSERT_CONSUMER = statements.fast(m.CONSUMER.insert())
_MULTI_TABLE_UPDATE = ('mysql', 'mariadb')


def plan(requests, view):
    """``(rows of (rp_id, rc_id, amount) per item in request order,
    {rp_id: (generation, {rc_id: used after})})`` when the snapshot
    ``view`` says this claim fits, else None (the ordinary path)."""
    if view is None or len(requests) != 1:
        return None
    req = requests[0]
    if not req.allocations or req.generation not in (
        None,
        allocation.NO_GENERATION,
    ):
        return None
    ids, provs, rc_ids = view.ids, view.providers, view.rc_ids
    items = []
    wanted = {}
    for rp_uuid, res in req.allocations.items():
        rp_id = ids.get(rp_uuid)
        if rp_id is None:
            return None
        p = provs[rp_id]
        for rc, amount in res.items():
            inv = p.inventories.get(rc)
            rc_id = rc_ids.get(rc)
            if inv is None or rc_id is None:
                return None
            if (
                amount < inv.min_unit
                or amount > inv.max_unit
                or amount % inv.step_size
            ):
                return None
            items.append((rp_id, rc_id, amount))
            key = (rp_uuid, rc)
            wanted[key] = wanted.get(key, 0) + amount
    after = {}
    for (rp_uuid, rc), amount in wanted.items():
        rp_id = ids[rp_uuid]
        p = provs[rp_id]
        inv = p.inventories[rc]
        capacity = int((inv.total - inv.reserved) * inv.allocation_ratio)
        used = p.usages.get(rc, 0)
        if used + amount > capacity:
            return None
        entry = after.get(rp_id)
        if entry is None:
            entry = after[rp_id] = (
                p.generation,
                {rc_ids[name]: n for name, n in p.usages.items()},
            )
        entry[1][rc_ids[rc]] = used + amount
    return items, after


def claim_noting(conn, requests, view):
    """:func:`allocation.replace_noting` for ``requests`` (run in a
    ``late_lock`` write: the counters are not bumped yet), the fast way
    when the snapshot ``view`` allows (see the module docstring). Raises
    :class:`Declined` when the consumer turned out to exist after the
    counters moved."""
    planned = plan(requests, view)
    if planned is not None and _bump_if_current(conn, view, planned[1]):
        return _write(conn, requests[0], view, *planned)
    base.take_counter_lock(conn)
    return allocation.replace_noting(conn, requests)


def _bump_if_current(conn, view, after):
    """Bump the counters (and, where one statement can, the provider's
    generation) if the database is at ``view.state``; True when done."""
    structure, usage = view.state
    params = {'b_structure': structure, 'b_usage': usage}
    if len(after) == 1 and conn.dialect.name in _MULTI_TABLE_UPDATE:
        ((rp_id, (generation, _used)),) = after.items()
        params.update(b_id=rp_id, b_expected=generation, b_new=generation + 1)
        if conn.execute(_CONDITIONAL_BUMP_ONE, params).rowcount != 2:
            return False
        conn.info.pop(base._PENDING, None)
        return True
    if conn.execute(_CONDITIONAL_BUMP, params).rowcount != 1:
        return False
    conn.info.pop(base._PENDING, None)
    # The snapshot is the database: the compare-and-swap cannot miss
    # (it raises ProviderGenerationRace if it ever did).
    allocation._increment_generations(
        conn, {rp_id: gen for rp_id, (gen, _u) in after.items()}
    )
    return True


def _write(conn, req, view, items, after):
    if conn.execute(_SEEN, {'b_uuid': req.uuid}).first() is not None:
        raise Declined()
    now = base.utcnow()
    conn.execute(
        _INSERT_ALLOCATIONS,
        [
            {
                'resource_provider_id': rp_id,
                'consumer_id': req.uuid,
                'resource_class_id': rc_id,
                'used': amount,
                'created_at': now,
                'updated_at': now,
            }
            for rp_id, rc_id, amount in items
        ],
    )
    conn.execute(
        _INSERT_CONSUMER,
        {
            'uuid': req.uuid,
            'project_id': req.project_id,
            'user_id': req.user_id,
            'generation': 1,
            'consumer_type_id': allocation.consumer_type_id(
                conn, req.consumer_type
            ),
            'created_at': now,
            'updated_at': now,
        },
    )
    structure, usage = view.state
    changes = {
        rp_id: (generation + 1, used)
        for rp_id, (generation, used) in after.items()
    }
    return (structure, usage + 1), changes
