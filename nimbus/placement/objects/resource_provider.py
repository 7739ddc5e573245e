"""Resource providers: create, read, update (re-parenting), delete."""

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from nimbus.placement.db import models as m
from nimbus.placement import exception
from nimbus.placement.objects import base
from nimbus.placement.objects import statements

_PARENT = m.RP.alias('parent')
_ROOT = m.RP.alias('root')
_COLUMNS = (
    m.RP.c.id,
    m.RP.c.uuid,
    m.RP.c.name,
    m.RP.c.generation,
    _PARENT.c.uuid.label('parent_provider_uuid'),
    _ROOT.c.uuid.label('root_provider_uuid'),
    m.RP.c.created_at,
    m.RP.c.updated_at,
    m.RP.c.parent_provider_id,
    m.RP.c.root_provider_id,
)

UNSET = object()


def _select():
    return sa.select(*_COLUMNS).select_from(
        m.RP.outerjoin(
            _PARENT, _PARENT.c.id == m.RP.c.parent_provider_id
        ).outerjoin(_ROOT, _ROOT.c.id == m.RP.c.root_provider_id)
    )


# Built once (see objects.base): the statements of the hot paths.
_GET = _select().where(m.RP.c.uuid == sa.bindparam('b_uuid'))
_REF = statements.fast(
    sa.select(m.RP.c.id, m.RP.c.uuid, m.RP.c.generation).where(
        m.RP.c.uuid == sa.bindparam('b_uuid')
    )
)
_PARENT_OF = statements.fast(
    sa.select(
        _PARENT.c.id, _PARENT.c.root_provider_id, _ROOT.c.uuid, _PARENT.c.uuid
    )
    .select_from(_PARENT.join(_ROOT, _ROOT.c.id == _PARENT.c.root_provider_id))
    .where(_PARENT.c.uuid == sa.bindparam('b_uuid'))
)
_CLASHES = sa.select(m.RP.c.uuid).where(
    sa.or_(
        m.RP.c.uuid == sa.bindparam('b_uuid'),
        m.RP.c.name == sa.bindparam('b_name'),
    )
)
_INSERT = statements.fast(m.RP.insert())
_SET_ROOT = statements.fast(
    m.RP.update()
    .where(m.RP.c.id == sa.bindparam('b_id'))
    .values(root_provider_id=sa.bindparam('b_root'))
)


def _not_found(uuid):
    # placement.resource_provider.not_found is the reshaper's code only
    # (as in OpenStack Placement); a missing provider elsewhere has none.
    return exception.ProviderNotFound(uuid=uuid)


def get(conn, uuid):
    """The provider row as a mapping; :class:`ProviderNotFound` if absent."""
    row = conn.execute(_GET, {'b_uuid': uuid}).mappings().first()
    if row is None:
        raise _not_found(uuid)
    return dict(row)


def get_ref(conn, uuid):
    """``{"id", "uuid", "generation"}`` of a provider (what the write paths
    need); :class:`ProviderNotFound` if absent."""
    row = conn.execute(_REF, {'b_uuid': uuid}).first()
    if row is None:
        raise _not_found(uuid)
    return {'id': row[0], 'uuid': row[1], 'generation': row[2]}


_REF_WITH = {}


def get_ref_with(conn, uuid, *columns, with_uuid=True):
    """:func:`get_ref` and, in the same query, the provider's rows of the
    table ``columns`` belong to (joined on its ``resource_provider_id``):
    ``(ref, [tuple of columns])``. A write path that replaces a provider's
    inventories, traits or aggregates reads both this way, one round trip
    instead of two, before its generation compare-and-swap. Without
    ``with_uuid`` the ref's ``uuid`` is ``uuid`` as asked (one column
    less to read: for a caller that does not use it)."""
    # The columns are module constants: their ids name them for good.
    key = (with_uuid, *map(id, columns))
    stmt = _REF_WITH.get(key)
    if stmt is None:
        table = columns[0].table
        head = (m.RP.c.id, m.RP.c.generation)
        if with_uuid:
            head += (m.RP.c.uuid,)
        stmt = _REF_WITH[key] = statements.fast(
            sa.select(*head, *columns)
            .select_from(
                m.RP.outerjoin(
                    table, table.c.resource_provider_id == m.RP.c.id
                )
            )
            .where(m.RP.c.uuid == sa.bindparam('b_uuid'))
        )
    rows = conn.execute(stmt, {'b_uuid': uuid}).all()
    if not rows:
        raise _not_found(uuid)
    first = rows[0]
    skip = 3 if with_uuid else 2
    ref = {
        'id': first[0],
        'uuid': first[2] if with_uuid else uuid,
        'generation': first[1],
    }
    return ref, [tuple(r[skip:]) for r in rows if r[skip] is not None]


def get_many(conn, ids=None):
    query = _select().order_by(m.RP.c.id)
    if ids is not None:
        query = query.where(m.RP.c.id.in_(list(ids)))
    return [dict(r) for r in conn.execute(query).mappings()]


class _Clash(Exception):
    """The INSERT of a new provider broke a unique constraint."""


def parent_of(conn, parent_uuid):
    """The row of :data:`_PARENT_OF` (id, root id, root uuid, uuid) of
    the provider ``parent_uuid``; BadRequest where there is none."""
    parent = conn.execute(_PARENT_OF, {'b_uuid': parent_uuid}).first()
    if parent is None:
        raise exception.BadRequest(
            'parent provider UUID %s does not exist.' % parent_uuid
        )
    return parent


def insert(conn, uuid, name, generation, parent, now):
    """Insert one provider row and return its id: under ``parent`` (its
    id and root id first, as :func:`parent_of` gives them), or a root of
    its own where ``parent`` is None. A clash with an existing uuid or
    name raises :class:`_Clash`. What :func:`create` and the bulk tree
    writes (:mod:`.provider_trees`) both insert."""
    try:
        rp_id = conn.execute(
            _INSERT,
            {
                'uuid': uuid,
                'name': name,
                'generation': generation,
                'parent_provider_id': parent[0] if parent else None,
                'root_provider_id': parent[1] if parent else None,
                'created_at': now,
                'updated_at': now,
            },
        ).inserted_primary_key[0]
    except sa_exc.IntegrityError as exc:
        raise _Clash() from exc
    if parent is None:
        conn.execute(_SET_ROOT, {'b_id': rp_id, 'b_root': rp_id})
    return rp_id


# MariaDB/MySQL, a new root provider in two statements instead of three
# (the counter bump, the INSERT, its root id set to its own id): the
# INSERT reads the counter row FOR UPDATE, so it takes the writers' lock
# first as the bump would; then one multi-table UPDATE bumps the counters
# and sets the root id (STRAIGHT_JOIN: the counter row first, as
# everywhere). Both change rows or raise, as the statements they replace.
_INSERT_ROOT_LOCKED = statements.fast(
    sa.text(
        'INSERT INTO %s (uuid, name, generation, created_at, updated_at) '
        'SELECT :uuid, :name, 0, :now, :now FROM %s WHERE id = 1 FOR UPDATE'
        % (m.RP.name, m.STATE.name)
    )
)
_BUMP_SET_ROOT = {
    (s, u): statements.fast(
        sa.text(
            'UPDATE %s AS s STRAIGHT_JOIN %s AS rp SET %s, '
            'rp.root_provider_id = rp.id WHERE s.id = 1 AND rp.id = :b_id'
            % (m.STATE.name, m.RP.name, ', '.join(base.bump_sets(s, u)))
        )
    )
    for s in (False, True)
    for u in (False, True)
}


def _insert_root(conn, uuid, name, now, pending):
    """:func:`insert` of a root provider with the ``pending`` counter bump
    (see :data:`_INSERT_ROOT_LOCKED`); its id."""
    try:
        rp_id = conn.execute(
            _INSERT_ROOT_LOCKED, {'uuid': uuid, 'name': name, 'now': now}
        ).inserted_primary_key[0]
    except sa_exc.IntegrityError as exc:
        raise _Clash() from exc
    if conn.execute(_BUMP_SET_ROOT[pending], {'b_id': rp_id}).rowcount != 2:
        raise exception.ConcurrentUpdate(what='resource provider')
    base.bump_done(conn)
    return rp_id


def create(conn, uuid, name, parent_uuid=None):
    """Insert a provider; returns its row as :func:`get` would. A clash
    with an existing uuid or name raises :class:`_Clash` (the transaction
    is spoiled then, on PostgreSQL at least): see :func:`create_in`."""
    parent = None
    if parent_uuid is not None:
        parent = parent_of(conn, parent_uuid)
    now = base.utcnow()
    pending = base.pending_bump(conn) if parent is None else None
    if pending is not None:
        rp_id = _insert_root(conn, uuid, name, now, pending)
    else:
        base.take_counter_lock(conn)
        rp_id = insert(conn, uuid, name, 0, parent, now)
    # Everything the row holds is known: no need to read it back.
    return {
        'id': rp_id,
        'uuid': uuid,
        'name': name,
        'generation': 0,
        'parent_provider_uuid': parent[3] if parent else None,
        'root_provider_uuid': parent[2] if parent else uuid,
        'created_at': now,
        'updated_at': now,
        'parent_provider_id': parent[0] if parent else None,
        'root_provider_id': parent[1] if parent else rp_id,
    }


def create_in(pdb, uuid, name, parent_uuid=None):
    """:func:`create` in a write transaction of ``pdb``. The insert goes
    first (the unique constraints decide, in one round trip fewer than
    asking beforehand); only when it clashes does a read find out with
    what, to answer Placement's 409 for a taken uuid or name."""
    try:
        return pdb.write(create, uuid, name, parent_uuid, late_lock=True)
    except _Clash:
        clashes = pdb.read(
            lambda conn: [
                r[0]
                for r in conn.execute(
                    _CLASHES, {'b_uuid': uuid, 'b_name': name}
                )
            ]
        )
    if uuid in clashes:
        raise exception.Conflict(
            'Conflicting resource provider uuid: %s already exists.' % uuid,
            error_code=exception.DUPLICATE_NAME,
        )
    if clashes:
        raise exception.DuplicateName(
            'Conflicting resource provider name: %s already exists.' % name
        )
    # Neither is taken now: the parent went away meanwhile (its foreign
    # key), or the clashing provider was deleted since.
    raise exception.ConcurrentUpdate(what='resource provider')


def _check_name_free(conn, name, own_id=None):
    row = conn.execute(sa.select(m.RP.c.id).where(m.RP.c.name == name)).first()
    if row is not None and row[0] != own_id:
        raise exception.DuplicateName(
            'Conflicting resource provider name: %s already exists.' % name
        )


def _descendants(conn, rp_id):
    found = [rp_id]
    frontier = [rp_id]
    while frontier:
        frontier = [
            r[0]
            for r in conn.execute(
                sa.select(m.RP.c.id).where(
                    m.RP.c.parent_provider_id.in_(frontier)
                )
            )
        ]
        found.extend(frontier)
    return found


def update(conn, uuid, name, parent_uuid=UNSET, allow_reparent=False):
    """Rename and/or (re-)parent a provider.

    Setting a parent on a root is always allowed (from 1.14); moving to
    another parent or back to a root needs ``allow_reparent`` (1.37).
    A parent inside the provider's own subtree is a loop: 400.
    """
    rp = get(conn, uuid)
    _check_name_free(conn, name, rp['id'])
    values = {'name': name, 'updated_at': base.utcnow()}
    new_root = None
    if parent_uuid is not UNSET and parent_uuid != rp['parent_provider_uuid']:
        if rp['parent_provider_uuid'] is not None and not allow_reparent:
            if parent_uuid is None:
                raise exception.BadRequest(
                    'Un-parenting a provider is not currently allowed.'
                )
            raise exception.BadRequest(
                'Re-parenting a provider is not currently allowed.'
            )
        subtree = _descendants(conn, rp['id'])
        if parent_uuid is None:
            values['parent_provider_id'] = None
            new_root = rp['id']
        else:
            parent = conn.execute(
                sa.select(m.RP.c.id, m.RP.c.root_provider_id).where(
                    m.RP.c.uuid == parent_uuid
                )
            ).first()
            if parent is None:
                raise exception.BadRequest(
                    'parent provider UUID %s does not exist.' % parent_uuid
                )
            if parent[0] in subtree:
                raise exception.BadRequest(
                    'creating loop in the provider tree is not allowed.'
                )
            values['parent_provider_id'] = parent[0]
            new_root = parent[1]
        if new_root != rp['root_provider_id']:
            conn.execute(
                m.RP.update()
                .where(m.RP.c.id.in_(subtree))
                .values(root_provider_id=new_root)
            )
    conn.execute(m.RP.update().where(m.RP.c.id == rp['id']).values(**values))
    return get(conn, uuid)


def delete(conn, uuid):
    rp = get(conn, uuid)
    rp_id = rp['id']
    if conn.execute(
        sa.select(m.RP.c.id).where(m.RP.c.parent_provider_id == rp_id).limit(1)
    ).first():
        raise exception.Conflict(
            'Unable to delete parent resource provider %s: It has child '
            'resource providers.' % uuid,
            error_code=exception.PROVIDER_CANNOT_DELETE_PARENT,
        )
    if conn.execute(
        sa.select(m.ALLOC.c.id)
        .where(m.ALLOC.c.resource_provider_id == rp_id)
        .limit(1)
    ).first():
        raise exception.Conflict(
            'Unable to delete resource provider %s: Resource provider has '
            'allocations.' % uuid,
            error_code=exception.PROVIDER_IN_USE,
        )
    for table in (m.INV, m.RPT, m.RPA):
        conn.execute(
            table.delete().where(table.c.resource_provider_id == rp_id)
        )
    conn.execute(m.RP.delete().where(m.RP.c.id == rp_id))
