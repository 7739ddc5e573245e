"""The cell database's ``migrations`` table: the only module that writes
SQL on it. One row per move of an instance (resize, cold migration, live
migration, evacuation), in Nova's shape; see
:mod:`nimbus.common.objects.migration` for the types, statuses and which
statuses are final.

Status changes are compare-and-swaps (:func:`set_status`): two services
racing to finish or undo the same move see exactly one of them win.
"""

import datetime
import uuid as uuidlib

import sqlalchemy as sa

from nimbus.common.db import row_copy
from nimbus.common.db.types import utcnow
from nimbus.common.objects import migration as migration_obj
from nimbus.db.cell import models

# The columns a caller reads and writes: the model's, but the row id and
# the bookkeeping ones (a column added to the model is carried by
# to_dict, create and copy without being named here).
_BOOKKEEPING = frozenset({'id', 'created_at', 'updated_at', 'deleted'})
_COLUMNS = tuple(
    attr.key
    for attr in sa.inspect(models.Migration).column_attrs
    if attr.key not in _BOOKKEEPING
)
# What a caller may change after create (never uuid, instance or type).
_UPDATABLE = frozenset(_COLUMNS) - {'uuid', 'instance_uuid', 'migration_type'}


def _iso(value):
    return value.isoformat() if value else None


def to_dict(row):
    """The row as a dict: every column, times as ISO 8601 strings, and
    ``id`` (the API's integer id)."""
    out = {name: getattr(row, name) for name in _COLUMNS}
    out['id'] = row.id
    out['details'] = row.details or {}
    out['created_at'] = _iso(row.created_at)
    out['updated_at'] = _iso(row.updated_at)
    out['deleted'] = row.deleted
    return out


def create(session, values):
    """Insert one migration (``values`` holds at least instance_uuid,
    migration_type and status; uuid is made when absent); its dict."""
    values = dict(values)
    unknown = set(values) - set(_COLUMNS)
    if unknown:
        raise ValueError('unknown migration fields: %s' % sorted(unknown))
    migration_obj.check_type(values.get('migration_type'))
    migration_obj.check_status(values.get('status'))
    values.setdefault('uuid', str(uuidlib.uuid4()))
    values.setdefault('cross_cell_move', False)
    values.setdefault('hidden', False)
    row = models.Migration(deleted=False, **values)
    session.add(row)
    session.flush()
    return to_dict(row)


def _select():
    return sa.select(models.Migration).where(
        models.Migration.deleted.is_(False)
    )


def get(session, migration_uuid):
    row = session.execute(
        _select().where(models.Migration.uuid == migration_uuid)
    ).scalar_one_or_none()
    return to_dict(row) if row is not None else None


def set_status(session, migration_uuid, status, expected=None, **updates):
    """Move a migration to ``status`` (with ``updates`` to other columns)
    if it is in one of ``expected`` (any status when None). True when the
    swap held; False when the migration is gone or in another status."""
    migration_obj.check_status(status)
    unknown = set(updates) - _UPDATABLE
    if unknown:
        raise ValueError('cannot update migration fields %s' % sorted(unknown))
    where = [
        models.Migration.uuid == migration_uuid,
        models.Migration.deleted.is_(False),
    ]
    if expected is not None:
        expected = [expected] if isinstance(expected, str) else list(expected)
        where.append(models.Migration.status.in_(expected))
    result = session.execute(
        sa.update(models.Migration)
        .where(*where)
        .values(status=status, updated_at=utcnow(), **updates)
        .execution_options(synchronize_session=False)
    )
    return result.rowcount == 1


def update(session, migration_uuid, **values):
    """Change columns other than the status (progress, dest node,
    details); True when the migration exists."""
    unknown = set(values) - (_UPDATABLE - {'status'})
    if unknown:
        raise ValueError('cannot update migration fields %s' % sorted(unknown))
    result = session.execute(
        sa.update(models.Migration)
        .where(
            models.Migration.uuid == migration_uuid,
            models.Migration.deleted.is_(False),
        )
        .values(updated_at=utcnow(), **values)
        .execution_options(synchronize_session=False)
    )
    return result.rowcount == 1


def copy(source, target, migration_uuid, **overrides):
    """Copy the migration ``migration_uuid`` from the ``source`` cell's
    session into the ``target``'s, same uuid, every column of the row
    (:func:`nimbus.common.db.row_copy.copy_row`; a new ``id``) with
    ``overrides`` (``hidden``); a copy left by an earlier attempt is
    replaced. Its dict, or None when the source has no such migration."""
    row = source.execute(
        _select().where(models.Migration.uuid == migration_uuid)
    ).scalar_one_or_none()
    if row is None:
        return None
    purge(target, migration_uuid)
    mine = row_copy.copy_row(row, **overrides)
    target.add(mine)
    target.flush()
    return to_dict(mine)


def purge(session, migration_uuid):
    """Delete the migration row (the target cell's copy of a cross-cell
    move that is undone or reverted)."""
    session.execute(
        sa.delete(models.Migration).where(
            models.Migration.uuid == migration_uuid
        )
    )


def in_progress(session, instance_uuid, migration_types=None):
    """The instance's newest migration that is not in a final status, or
    None (an instance has at most one move under way)."""
    query = _select().where(
        models.Migration.instance_uuid == instance_uuid,
        models.Migration.status.not_in(sorted(migration_obj.FINAL)),
    )
    if migration_types:
        query = query.where(
            models.Migration.migration_type.in_(list(migration_types))
        )
    row = session.execute(
        query.order_by(models.Migration.id.desc()).limit(1)
    ).scalar_one_or_none()
    return to_dict(row) if row is not None else None


def for_instance(session, instance_uuid, only_in_progress=False, types=None):
    """The instance's migrations, oldest first."""
    query = _select().where(models.Migration.instance_uuid == instance_uuid)
    if only_in_progress:
        query = query.where(
            models.Migration.status.not_in(sorted(migration_obj.FINAL))
        )
    if types:
        query = query.where(models.Migration.migration_type.in_(list(types)))
    rows = session.execute(query.order_by(models.Migration.id)).scalars()
    return [to_dict(row) for row in rows]


def with_status(session, statuses, migration_types=None, older_than=None):
    """Migrations in one of ``statuses`` (e.g. resizes ``finished`` for
    longer than the confirm window: ``older_than`` seconds since their
    last change)."""
    query = _select().where(models.Migration.status.in_(list(statuses)))
    if migration_types:
        query = query.where(
            models.Migration.migration_type.in_(list(migration_types))
        )
    if older_than is not None:
        cutoff = utcnow() - datetime.timedelta(seconds=older_than)
        query = query.where(
            sa.func.coalesce(
                models.Migration.updated_at, models.Migration.created_at
            )
            <= cutoff
        )
    rows = session.execute(query.order_by(models.Migration.id)).scalars()
    return [to_dict(row) for row in rows]


def _filtered(filters):
    """The select of the migration rows matching ``filters``: host
    (source or destination), source_compute, dest_compute, status,
    migration_type, instance_uuid, user_id, project_id, changes_since /
    changes_before (datetimes on updated_at, or created_at when never
    updated), hidden (default: not hidden)."""
    filters = dict(filters or {})
    query = _select()
    column = models.Migration
    if 'host' in filters:
        host = filters.pop('host')
        query = query.where(
            sa.or_(column.source_compute == host, column.dest_compute == host)
        )
    changed = sa.func.coalesce(column.updated_at, column.created_at)
    since = filters.pop('changes_since', None)
    until = filters.pop('changes_before', None)
    if since is not None:
        query = query.where(changed >= since)
    if until is not None:
        query = query.where(changed <= until)
    query = query.where(column.hidden.is_(bool(filters.pop('hidden', False))))
    for name in (
        'source_compute',
        'dest_compute',
        'status',
        'migration_type',
        'instance_uuid',
        'user_id',
        'project_id',
    ):
        if name in filters:
            value = filters.pop(name)
            if isinstance(value, (list, tuple, set)):
                query = query.where(getattr(column, name).in_(list(value)))
            else:
                query = query.where(getattr(column, name) == value)
    if filters:
        raise ValueError('unknown migration filters: %s' % sorted(filters))
    return query


def listing(session, filters=None, limit=None, before=None):
    """Migrations for ``GET /os-migrations`` across cells: the filters of
    :func:`_filtered`, newest first by (created_at, id, uuid): created_at
    first (MariaDB keeps it to the second), the cell's id next (the order
    they were made in, as Nova), the uuid last (ids of two cells may be
    equal), so that one page over several cells has one order. At most
    ``limit``, only those after ``before`` (:func:`marker_of`'s key)."""
    query = _filtered(filters)
    column = models.Migration
    if before is not None:
        created_at, marker_id, marker_uuid = before
        query = query.where(
            sa.or_(
                column.created_at < created_at,
                sa.and_(
                    column.created_at == created_at,
                    sa.or_(
                        column.id < marker_id,
                        sa.and_(
                            column.id == marker_id, column.uuid < marker_uuid
                        ),
                    ),
                ),
            )
        )
    query = query.order_by(
        column.created_at.desc(), column.id.desc(), column.uuid.desc()
    )
    if limit is not None:
        query = query.limit(limit)
    return [to_dict(row) for row in session.execute(query).scalars()]


def order_key(migration):
    """The key :func:`listing` orders by, of a migration's dict (for
    merging the pages of several cells)."""
    return migration['created_at'], migration['id'], migration['uuid']


def marker_of(session, migration_uuid):
    """``(created_at, id, uuid)`` of a migration (a page's marker), or
    None."""
    row = session.execute(
        sa.select(
            models.Migration.created_at,
            models.Migration.id,
            models.Migration.uuid,
        ).where(models.Migration.uuid == migration_uuid)
    ).one_or_none()
    return None if row is None else (row.created_at, row.id, row.uuid)


def from_source(session, host, statuses, migration_types=None):
    """Migrations away from ``host`` in one of ``statuses`` (a source
    compute back after an evacuation finds the ``done`` ones)."""
    query = _select().where(
        models.Migration.source_compute == host,
        models.Migration.status.in_(list(statuses)),
    )
    if migration_types:
        query = query.where(
            models.Migration.migration_type.in_(list(migration_types))
        )
    rows = session.execute(query.order_by(models.Migration.id)).scalars()
    return [to_dict(row) for row in rows]


def hosts_named(session, hosts):
    """Which of ``hosts`` some migration names as its source or
    destination, whatever its type or status."""
    hosts = list(hosts)
    found = set()
    for column in (
        models.Migration.source_compute,
        models.Migration.dest_compute,
    ):
        found.update(
            session.execute(
                sa.select(column).where(column.in_(hosts)).distinct()
            ).scalars()
        )
    return found


def holding(session, uuids):
    """Which of ``uuids`` are migrations that may hold a placement
    allocation (the source's, consumer type MIGRATION): those in progress,
    and evacuations ``done`` whose source has not come back yet. The
    audit takes their allocations for a move's, not orphans."""
    uuids = list(uuids)
    if not uuids:
        return set()
    query = _select().where(
        models.Migration.uuid.in_(uuids),
        sa.or_(
            models.Migration.status.not_in(sorted(migration_obj.FINAL)),
            sa.and_(
                models.Migration.status == 'done',
                models.Migration.migration_type == migration_obj.EVACUATION,
            ),
        ),
    )
    return {row.uuid for row in session.execute(query).scalars()}


def ended(session, uuids):
    """``{uuid: row dict}`` of those of ``uuids`` that are migrations in a
    final status, but an evacuation ``done`` (its source may still hold
    the allocation, see :func:`holding`): a consumer of placement that is
    one of them holds what its move should have given back."""
    uuids = list(uuids)
    if not uuids:
        return {}
    query = _select().where(
        models.Migration.uuid.in_(uuids),
        models.Migration.status.in_(sorted(migration_obj.FINAL)),
        sa.not_(
            sa.and_(
                models.Migration.status == 'done',
                models.Migration.migration_type == migration_obj.EVACUATION,
            )
        ),
    )
    return {row.uuid: to_dict(row) for row in session.execute(query).scalars()}
