"""Resource providers: create, read, update (re-parenting), delete."""

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from nimbus.placement.db import models as m
from nimbus.placement import exception
from nimbus.placement.objects import base

_PARENT = m.RP.alias('parent')
_ROOT = m.RP.alias('root')
_COLUMNS = (m.RP.c.id, m.RP.c.uuid, m.RP.c.name, m.RP.c.generation,
            _PARENT.c.uuid.label('parent_provider_uuid'),
            _ROOT.c.uuid.label('root_provider_uuid'),
            m.RP.c.created_at, m.RP.c.updated_at,
            m.RP.c.parent_provider_id, m.RP.c.root_provider_id)

UNSET = object()


def _select():
    return (sa.select(*_COLUMNS)
            .select_from(m.RP.outerjoin(
                _PARENT, _PARENT.c.id == m.RP.c.parent_provider_id)
                .outerjoin(_ROOT, _ROOT.c.id == m.RP.c.root_provider_id)))


def get(conn, uuid):
    """The provider row as a mapping; :class:`ProviderNotFound` if absent."""
    row = conn.execute(_select().where(m.RP.c.uuid == uuid)).mappings()\
        .first()
    if row is None:
        raise exception.ProviderNotFound(uuid=uuid,
                                         error_code=exception.PROVIDER_NOT_FOUND)
    return dict(row)


def get_many(conn, ids=None):
    query = _select().order_by(m.RP.c.id)
    if ids is not None:
        query = query.where(m.RP.c.id.in_(list(ids)))
    return [dict(r) for r in conn.execute(query).mappings()]


def create(conn, uuid, name, parent_uuid=None):
    parent = None
    if parent_uuid is not None:
        parent = conn.execute(sa.select(m.RP.c.id, m.RP.c.root_provider_id)
                              .where(m.RP.c.uuid == parent_uuid)).first()
        if parent is None:
            raise exception.BadRequest(
                'parent provider UUID %s does not exist.' % parent_uuid,
                error_code=exception.PROVIDER_NOT_FOUND)
    if conn.execute(sa.select(m.RP.c.id).where(m.RP.c.uuid == uuid))\
            .first() is not None:
        raise exception.Conflict(
            'Conflicting resource provider uuid: %s already exists.' % uuid,
            error_code=exception.DUPLICATE_NAME)
    _check_name_free(conn, name)
    now = base.utcnow()
    try:
        rp_id = conn.execute(m.RP.insert().values(
            uuid=uuid, name=name, generation=0,
            parent_provider_id=parent[0] if parent else None,
            root_provider_id=parent[1] if parent else None,
            created_at=now, updated_at=now)).inserted_primary_key[0]
    except sa_exc.IntegrityError:
        raise exception.DuplicateName(
            'Conflicting resource provider name: %s already exists.' % name)
    if parent is None:
        conn.execute(m.RP.update().where(m.RP.c.id == rp_id)
                     .values(root_provider_id=rp_id))
    return get(conn, uuid)


def _check_name_free(conn, name, own_id=None):
    row = conn.execute(sa.select(m.RP.c.id).where(m.RP.c.name == name))\
        .first()
    if row is not None and row[0] != own_id:
        raise exception.DuplicateName(
            'Conflicting resource provider name: %s already exists.' % name)


def _descendants(conn, rp_id):
    found = [rp_id]
    frontier = [rp_id]
    while frontier:
        frontier = [r[0] for r in conn.execute(
            sa.select(m.RP.c.id).where(
                m.RP.c.parent_provider_id.in_(frontier)))]
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
    if parent_uuid is not UNSET and \
            parent_uuid != rp['parent_provider_uuid']:
        if rp['parent_provider_uuid'] is not None and not allow_reparent:
            if parent_uuid is None:
                raise exception.BadRequest(
                    'Un-parenting a provider is not currently allowed.')
            raise exception.BadRequest(
                'Re-parenting a provider is not currently allowed.')
        subtree = _descendants(conn, rp['id'])
        if parent_uuid is None:
            values['parent_provider_id'] = None
            new_root = rp['id']
        else:
            parent = conn.execute(
                sa.select(m.RP.c.id, m.RP.c.root_provider_id)
                .where(m.RP.c.uuid == parent_uuid)).first()
            if parent is None:
                raise exception.BadRequest(
                    'parent provider UUID %s does not exist.' % parent_uuid,
                    error_code=exception.PROVIDER_NOT_FOUND)
            if parent[0] in subtree:
                raise exception.BadRequest(
                    'creating loop in the provider tree is not allowed.')
            values['parent_provider_id'] = parent[0]
            new_root = parent[1]
        if new_root != rp['root_provider_id']:
            conn.execute(m.RP.update().where(m.RP.c.id.in_(subtree))
                         .values(root_provider_id=new_root))
    conn.execute(m.RP.update().where(m.RP.c.id == rp['id']).values(**values))
    return get(conn, uuid)


def delete(conn, uuid):
    rp = get(conn, uuid)
    rp_id = rp['id']
    if conn.execute(sa.select(m.RP.c.id).where(
            m.RP.c.parent_provider_id == rp_id).limit(1)).first():
        raise exception.Conflict(
            'Unable to delete parent resource provider %s: It has child '
            'resource providers.' % uuid,
            error_code=exception.PROVIDER_CANNOT_DELETE_PARENT)
    if conn.execute(sa.select(m.ALLOC.c.id).where(
            m.ALLOC.c.resource_provider_id == rp_id).limit(1)).first():
        raise exception.Conflict(
            'Unable to delete resource provider %s: Resource provider has '
            'allocations.' % uuid, error_code=exception.PROVIDER_IN_USE)
    for table in (m.INV, m.RPT, m.RPA):
        conn.execute(table.delete().where(
            table.c.resource_provider_id == rp_id))
    conn.execute(m.RP.delete().where(m.RP.c.id == rp_id))
