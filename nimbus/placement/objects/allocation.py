"""Allocations and consumers.

:func:`replace` is the single write path of PUT /allocations/{consumer},
POST /allocations, DELETE and the reshaper: in the caller's transaction it
checks consumer generations (1.28), removes the consumers' old allocations,
checks capacity, min/max/step of the new ones, writes them, bumps the
generation of every provider touched as OpenStack Placement 16 does (each
provider of the new allocations once, plus the providers of a consumer
whose allocations are emptied; DELETE bumps none) and keeps consumer records (a consumer
without allocations is deleted, as in OpenStack Placement).

The generations of the touched providers are read before the capacity
check and compared-and-swapped at the end: a provider changed in between
by a writer that did not queue on the counter row lock raises
:class:`~nimbus.placement.exception.ProviderGenerationRace`, and
:func:`nimbus.placement.objects.write_retry.write_retrying` runs the whole transaction again, up to
``[placement] allocation_conflict_retry_count`` attempts, before answering
409 ``placement.concurrent_update`` (as OpenStack Placement does).
"""

import weakref

from oslo_log import log as logging
import sqlalchemy as sa

from nimbus.placement.db import models as m
from nimbus.placement.objects import inventory
from nimbus.placement import exception
from nimbus.placement.objects import base
from nimbus.placement.objects import statements

LOG = logging.getLogger(__name__)

INCOMPLETE_ID = '00000000-0000-0000-0000-000000000000'
NO_GENERATION = object()


def get_consumer(conn, uuid):
    return (
        conn.execute(
            sa.select(
                m.CONSUMER.c.id,
                m.CONSUMER.c.uuid,
                m.CONSUMER.c.project_id,
                m.CONSUMER.c.user_id,
                m.CONSUMER.c.generation,
                m.CTYPE.c.name.label('consumer_type'),
            )
            .select_from(
                m.CONSUMER.outerjoin(
                    m.CTYPE, m.CTYPE.c.id == m.CONSUMER.c.consumer_type_id
                )
            )
            .where(m.CONSUMER.c.uuid == uuid)
        )
        .mappings()
        .first()
    )


def for_consumer(conn, uuid):
    """``({rp_uuid: {"generation", "resources"}}, consumer row or None)``."""
    rows = conn.execute(
        sa.select(m.RP.c.uuid, m.RP.c.generation, m.RC.c.name, m.ALLOC.c.used)
        .select_from(
            m.ALLOC.join(
                m.RP, m.RP.c.id == m.ALLOC.c.resource_provider_id
            ).join(m.RC, m.RC.c.id == m.ALLOC.c.resource_class_id)
        )
        .where(m.ALLOC.c.consumer_id == uuid)
    ).all()
    out = {}
    for rp_uuid, gen, rc, used in rows:
        entry = out.setdefault(rp_uuid, {'generation': gen, 'resources': {}})
        entry['resources'][rc] = used
    return out, get_consumer(conn, uuid)


# Deliberately like for_consumer: the other side of the same join, keyed
# by consumer and with its generation.
def for_provider(conn, rp_id, with_generation=False):
    """``{consumer_uuid: {"resources": {rc: n}}}`` of one provider, with
    each consumer's ``consumer_generation`` if asked (1.28)."""
    rows = conn.execute(
        sa.select(
            m.ALLOC.c.consumer_id,
            m.RC.c.name,
            m.ALLOC.c.used,
            m.CONSUMER.c.generation,
        )
        .select_from(
            m.ALLOC.join(
                m.RC, m.RC.c.id == m.ALLOC.c.resource_class_id
            ).outerjoin(m.CONSUMER, m.CONSUMER.c.uuid == m.ALLOC.c.consumer_id)
        )
        .where(m.ALLOC.c.resource_provider_id == rp_id)
    ).all()
    out = {}
    for consumer, rc, used, generation in rows:
        entry = out.get(consumer)
        if entry is None:
            entry = out[consumer] = {'resources': {}}
            if with_generation:
                entry['consumer_generation'] = generation
        entry['resources'][rc] = used
    return out


# Consumer type ids per engine, once read committed: a type is never
# renamed or deleted. One this transaction created is not kept (it may
# yet roll back).
_TYPE_IDS = weakref.WeakKeyDictionary()
_TYPE_ID = statements.fast(
    sa.select(m.CTYPE.c.id).where(m.CTYPE.c.name == sa.bindparam('b_name'))
)
_NEW_TYPES = 'nimbus_placement_new_consumer_types'


def consumer_type_id(conn, name):
    """The id of consumer type ``name`` (created when new); None for
    None."""
    if name is None:
        return None
    type_id = _TYPE_IDS.get(conn.engine, {}).get(name)
    if type_id is not None:
        return type_id
    row = conn.execute(_TYPE_ID, {'b_name': name}).first()
    txn = conn.get_transaction()
    made = conn.info.get(_NEW_TYPES)
    if made is None or made[0] is not txn:
        made = conn.info[_NEW_TYPES] = (txn, set())
    if row is None:
        made[1].add(name)
        return conn.execute(
            m.CTYPE.insert().values(name=name)
        ).inserted_primary_key[0]
    if name not in made[1]:
        _TYPE_IDS.setdefault(conn.engine, {})[name] = row[0]
    return row[0]


class Request:
    """The wanted final allocations of one consumer.

    ``allocations`` is ``{rp_uuid: {rc: amount}}`` (empty: remove all).
    ``generation`` is the expected consumer generation (``None``: a new
    consumer) or :data:`NO_GENERATION` before 1.28.
    """

    __slots__ = (
        'uuid',
        'allocations',
        'project_id',
        'user_id',
        'generation',
        'consumer_type',
    )

    def __init__(
        self,
        uuid,
        allocations,
        project_id=None,
        user_id=None,
        generation=NO_GENERATION,
        consumer_type=None,
    ):
        self.uuid = uuid
        self.allocations = allocations
        self.project_id = project_id or INCOMPLETE_ID
        self.user_id = user_id or INCOMPLETE_ID
        self.generation = generation
        self.consumer_type = consumer_type


def prepare(conn, requests):
    """Check consumer generations and drop the consumers' old allocations.

    Returns the state :func:`apply` needs: existing consumers and the ids
    of the providers that lost the allocations of a consumer whose new
    set is empty (the only old providers whose generation is bumped).
    """
    uuids = [r.uuid for r in requests]
    consumers = {
        row['uuid']: row
        for row in conn.execute(
            sa.select(
                m.CONSUMER.c.uuid,
                m.CONSUMER.c.id,
                m.CONSUMER.c.generation,
                m.CONSUMER.c.project_id,
                m.CONSUMER.c.user_id,
                m.CONSUMER.c.consumer_type_id,
            ).where(m.CONSUMER.c.uuid.in_(uuids))
        ).mappings()
    }
    for req in requests:
        if req.generation is NO_GENERATION:
            continue
        current = consumers.get(req.uuid)
        have = current['generation'] if current else None
        if have != req.generation:
            raise exception.ConcurrentUpdate(
                'consumer generation conflict - expected %s but got %s'
                % (
                    'null' if have is None else have,
                    'null' if req.generation is None else req.generation,
                )
            )
    old = conn.execute(
        sa.select(m.ALLOC.c.consumer_id, m.ALLOC.c.resource_provider_id)
        .distinct()
        .where(m.ALLOC.c.consumer_id.in_(uuids))
    ).all()
    if old:
        conn.execute(m.ALLOC.delete().where(m.ALLOC.c.consumer_id.in_(uuids)))
    # As Placement 16: a provider that only loses a consumer's allocations
    # because they move elsewhere keeps its generation; one that loses them
    # because the consumer's allocations are emptied is bumped.
    emptied = {r.uuid for r in requests if not r.allocations}
    old_rps = {rp_id for consumer, rp_id in old if consumer in emptied}
    conn.info[_TOUCHED] = {rp_id for _consumer, rp_id in old}
    return consumers, old_rps


def apply(conn, requests, prepared):
    """Check and write the new allocations (after :func:`prepare`)."""
    consumers, old_rps = prepared
    rp_uuids = {u for r in requests for u in r.allocations}
    rps = base.provider_ids(conn, rp_uuids)
    missing = sorted(rp_uuids - set(rps))
    if missing:
        raise exception.BadRequest(
            "Allocation for resource provider '%s' that does not exist."
            % missing[0]
        )
    rc_names = {
        rc for r in requests for res in r.allocations.values() for rc in res
    }
    rc_ids = base.name_ids(conn, m.RC, rc_names)
    unknown = sorted(rc_names - set(rc_ids))
    if unknown:
        raise exception.BadRequest(
            'Unable to allocate inventory: unknown resource class %s'
            % unknown[0]
        )
    wanted = {}
    for req in requests:
        for rp_uuid, res in req.allocations.items():
            for rc, amount in res.items():
                key = (rps[rp_uuid][0], rc_ids[rc])
                wanted[key] = wanted.get(key, 0) + amount
    generations = _generations(conn, rps, old_rps)
    conn.info.setdefault(_TOUCHED, set()).update(generations)
    _check_capacity(conn, requests, rps, rc_ids, wanted)
    now = base.utcnow()
    rows = [
        {
            'resource_provider_id': rps[rp_uuid][0],
            'consumer_id': req.uuid,
            'resource_class_id': rc_ids[rc],
            'used': amount,
            'created_at': now,
            'updated_at': now,
        }
        for req in requests
        for rp_uuid, res in req.allocations.items()
        for rc, amount in res.items()
    ]
    if rows:
        conn.execute(m.ALLOC.insert(), rows)
    _increment_generations(conn, generations)
    _save_consumers(conn, requests, consumers, now)


def _generations(conn, rps, old_rps):
    """``{rp_id: generation}`` of every provider the write touches: those
    of the new allocations (``rps``, just read) and those whose old
    allocations were removed (``old_rps``, ids)."""
    generations = {rp_id: gen for rp_id, gen in rps.values()}
    others = old_rps - set(generations)
    if others:
        generations.update(
            conn.execute(
                sa.select(m.RP.c.id, m.RP.c.generation).where(
                    m.RP.c.id.in_(others)
                )
            ).all()
        )
    return generations


def _increment_generations(conn, generations):
    """Compare-and-swap every touched provider's generation at once."""
    if not generations:
        return
    res = conn.execute(
        m.RP.update()
        .where(
            sa.tuple_(m.RP.c.id, m.RP.c.generation).in_(
                list(generations.items())
            )
        )
        .values(generation=m.RP.c.generation + 1)
    )
    if res.rowcount != len(generations):
        raise exception.ProviderGenerationRace()


def _check_capacity(conn, requests, rps, rc_ids, wanted):
    if not wanted:
        return
    rp_ids = {k[0] for k in wanted}
    invs = {
        (r[0], r[1]): r[2:]
        for r in conn.execute(
            sa.select(
                m.INV.c.resource_provider_id,
                m.INV.c.resource_class_id,
                *inventory.CAPACITY_COLUMNS,
            ).where(m.INV.c.resource_provider_id.in_(rp_ids))
        )
    }
    used = {
        (r[0], r[1]): r[2]
        for r in conn.execute(
            sa.select(
                m.ALLOC.c.resource_provider_id,
                m.ALLOC.c.resource_class_id,
                sa.func.sum(m.ALLOC.c.used),
            )
            .where(m.ALLOC.c.resource_provider_id.in_(rp_ids))
            .group_by(
                m.ALLOC.c.resource_provider_id, m.ALLOC.c.resource_class_id
            )
        )
    }
    uuid_of = {v[0]: k for k, v in rps.items()}
    rc_of = {v: k for k, v in rc_ids.items()}
    for req in requests:
        for rp_uuid, res in req.allocations.items():
            for rc, amount in res.items():
                inv = invs.get((rps[rp_uuid][0], rc_ids[rc]))
                if inv is None:
                    raise exception.Conflict(
                        "Unable to allocate inventory: Inventory for '%s' on "
                        "resource provider '%s' invalid." % (rc, rp_uuid)
                    )
                _total, _res, min_unit, max_unit, step, _ratio = inv
                if amount < min_unit or amount > max_unit or amount % step:
                    raise exception.CapacityExceeded(
                        detail=(
                            'Unable to allocate %d %s on resource provider %s: '
                            'must be between min_unit %d and max_unit %d in '
                            'steps of %d.'
                            % (amount, rc, rp_uuid, min_unit, max_unit, step)
                        )
                    )
    for key, amount in wanted.items():
        total, reserved, _mn, _mx, _st, ratio = invs[key]
        capacity = int((total - reserved) * ratio)
        current = used.get(key, 0) or 0
        if current + amount > capacity:
            raise exception.CapacityExceeded(
                detail=(
                    'Unable to allocate %d %s on resource provider %s: %d of '
                    'capacity %d already used.'
                    % (
                        amount,
                        rc_of[key[1]],
                        uuid_of[key[0]],
                        current,
                        capacity,
                    )
                )
            )


def _save_consumers(conn, requests, consumers, now):
    gone = []
    for req in requests:
        current = consumers.get(req.uuid)
        if not req.allocations:
            if current is not None:
                gone.append(current['id'])
            continue
        type_id = consumer_type_id(conn, req.consumer_type)
        if current is None:
            conn.execute(
                m.CONSUMER.insert().values(
                    uuid=req.uuid,
                    project_id=req.project_id,
                    user_id=req.user_id,
                    generation=1,
                    consumer_type_id=type_id,
                    created_at=now,
                    updated_at=now,
                )
            )
            continue
        values = {
            'generation': m.CONSUMER.c.generation + 1,
            'updated_at': now,
            'project_id': req.project_id,
            'user_id': req.user_id,
        }
        if type_id is not None:
            values['consumer_type_id'] = type_id
        conn.execute(
            m.CONSUMER.update()
            .where(m.CONSUMER.c.id == current['id'])
            .values(**values)
        )
    if gone:
        conn.execute(m.CONSUMER.delete().where(m.CONSUMER.c.id.in_(gone)))


def replace(conn, requests):
    """Make each request's allocations the consumer's complete set."""
    apply(conn, requests, prepare(conn, requests))


_TOUCHED = 'nimbus_placement_touched_providers'


def replace_noting(conn, requests):
    """:func:`replace`, then what it left on the providers it touched, for
    the snapshot cache (:meth:`SnapshotCache.note_usage`): ``(counters,
    {rp_id: (generation, {rc_id: used})})`` read in the write's own
    transaction, after its counter bump (so the counters are this write's
    and no other writer's)."""
    conn.info.pop(_TOUCHED, None)
    replace(conn, requests)
    return _noted(conn, sorted(conn.info.pop(_TOUCHED, ())))


def _noted(conn, touched):
    """``(counters, {rp_id: (generation, {rc_id: used})})`` of the
    providers ``touched`` (ids), read in the writing transaction."""
    state = base.read_state(conn)
    if not touched:
        return state, {}
    found = {
        rp_id: (gen, {})
        for rp_id, gen in conn.execute(
            sa.select(m.RP.c.id, m.RP.c.generation).where(
                m.RP.c.id.in_(touched)
            )
        )
    }
    for rp_id, rc_id, used in conn.execute(
        sa.select(
            m.ALLOC.c.resource_provider_id,
            m.ALLOC.c.resource_class_id,
            sa.func.sum(m.ALLOC.c.used),
        )
        .where(m.ALLOC.c.resource_provider_id.in_(touched))
        .group_by(m.ALLOC.c.resource_provider_id, m.ALLOC.c.resource_class_id)
    ):
        if rp_id in found:
            found[rp_id][1][rc_id] = int(used)
    return state, found


def delete_consumer(conn, uuid):
    """DELETE /allocations/{consumer}: 404 when there is nothing."""
    exists = conn.execute(
        sa.select(m.ALLOC.c.id).where(m.ALLOC.c.consumer_id == uuid).limit(1)
    ).first()
    if exists is None:
        raise exception.NoAllocations(
            "No allocations for consumer '%s'" % uuid
        )
    # Placement 16 deletes them without bumping any provider generation
    # (unlike PUT or POST of empty allocations, which do).
    conn.execute(m.ALLOC.delete().where(m.ALLOC.c.consumer_id == uuid))
    conn.execute(m.CONSUMER.delete().where(m.CONSUMER.c.uuid == uuid))


def delete_consumer_noting(conn, uuid):
    """:func:`delete_consumer`, then what it left on the providers the
    consumer had allocations on (as :func:`replace_noting`)."""
    touched = sorted(
        r[0]
        for r in conn.execute(
            sa.select(m.ALLOC.c.resource_provider_id)
            .where(m.ALLOC.c.consumer_id == uuid)
            .distinct()
        )
    )
    delete_consumer(conn, uuid)
    return _noted(conn, touched)
