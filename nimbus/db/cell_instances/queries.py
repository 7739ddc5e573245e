"""Reading a cell's ``instances`` and ``instance_faults`` for the compute
API's lists and usages, the dashboard, the audit, the build check and the
scheduler's host state. Part of the owner of those tables
(:mod:`nimbus.db.cell_instances`): nothing else writes SQL on them.

Each function takes a session of one cell's database and returns rows
(or ORM objects) as the caller shapes them.
"""

import sqlalchemy as sa

from nimbus.common import instance_states as states
from nimbus.common.db import chunks
from nimbus.db.cell import models

Instance = models.Instance
Fault = models.InstanceFault
# The rows a cell owns: not the hidden copy of a cross-cell move's other
# cell (listed, counted and audited where the instance mapping points).
_OWNED = Instance.hidden.is_(False)


# What the compute API shows of an instance (lists and show): every column
# but the build's own (its request spec with the untried alternates, a
# document of kilobytes, and the accelerator requests) and the row id.
SHOWN = (
    Instance.uuid,
    Instance.display_name,
    Instance.project_id,
    Instance.user_id,
    Instance.host,
    Instance.node,
    Instance.compute_node_uuid,
    Instance.instance_group_uuid,
    Instance.vm_state,
    Instance.task_state,
    Instance.power_state,
    Instance.flavor,
    Instance.image_ref,
    Instance.availability_zone,
    Instance.metadata_items,
    Instance.server_attributes,
    Instance.created_at,
    Instance.updated_at,
    Instance.launched_at,
    Instance.terminated_at,
    Instance.deleted,
    Instance.deleted_at,
    Instance.locked_by,
    Instance.locked_reason,
    Instance.hidden,
)


def shown(session, instance_uuid):
    """The :data:`SHOWN` columns of the instance's row (deleted or not),
    or None."""
    return session.execute(
        sa.select(*SHOWN).where(Instance.uuid == instance_uuid)
    ).first()


def live(session, instance_uuid):
    """The row of the instance, or None when it is gone (deleted)."""
    return session.execute(
        sa.select(Instance).where(
            Instance.uuid == instance_uuid, Instance.deleted.is_(False)
        )
    ).scalar()


def faults(session, instance_uuids, by_time=False):
    """The fault rows of these instances, oldest first (by creation time
    with ``by_time``, else by id): the last one of an instance is its
    newest."""
    if not instance_uuids:
        return []
    order = (
        (Fault.created_at.asc(), Fault.id.asc()) if by_time else (Fault.id,)
    )
    return list(
        session.execute(
            sa.select(Fault)
            .where(Fault.instance_uuid.in_(list(instance_uuids)))
            .order_by(*order)
        ).scalars()
    )


def live_hosts(session, instance_uuids):
    """The hosts of those of these instances that are live and have one."""
    return {
        host
        for (host,) in session.execute(
            sa.select(Instance.host).where(
                Instance.uuid.in_(list(instance_uuids)),
                Instance.deleted.is_(False),
            )
        ).all()
        if host
    }


def placed(session):
    """The live instances that have a host (ORM rows)."""
    return session.execute(
        sa.select(Instance).where(
            Instance.deleted.is_(False), Instance.host.is_not(None), _OWNED
        )
    ).scalars()


def placed_usage(session):
    """``[(host, node, flavor)]`` of the live instances with a host (only
    those columns)."""
    return session.execute(
        sa.select(Instance.host, Instance.node, Instance.flavor).where(
            Instance.deleted.is_(False), Instance.host.is_not(None), _OWNED
        )
    ).all()


def hosts_named(session, hosts):
    """Which of ``hosts`` some instance row names as its host, deleted
    or not."""
    return set(
        session.execute(
            sa.select(models.Instance.host)
            .where(models.Instance.host.in_(list(hosts)))
            .distinct()
        ).scalars()
    )


def on_host_by_project(session, host):
    """``[(project_id, flavor)]`` of the live instances on ``host``."""
    return session.execute(
        sa.select(Instance.project_id, Instance.flavor).where(
            Instance.host == host, Instance.deleted.is_(False), _OWNED
        )
    ).all()


def flavors_of_project(session, project_id):
    """The flavors of ``project_id``'s live instances."""
    return list(
        session.execute(
            sa.select(Instance.flavor).where(
                Instance.project_id == project_id,
                Instance.deleted.is_(False),
                _OWNED,
            )
        ).scalars()
    )


def newest_failed(session, limit, any_state=False):
    """The newest live instances in ERROR (every live one with
    ``any_state``, as in cell0), at most ``limit``."""
    query = sa.select(Instance).where(Instance.deleted.is_(False))
    if not any_state:
        query = query.where(Instance.vm_state == 'error')
    return (
        session.execute(query.order_by(Instance.id.desc()).limit(limit))
        .scalars()
        .all()
    )


def alive_between(session, start, stop, project_id=None):
    """The instances (ORM rows) alive at some point of [start, stop]."""
    query = sa.select(Instance).where(
        sa.or_(
            Instance.terminated_at.is_(None), Instance.terminated_at >= start
        ),
        sa.or_(Instance.launched_at.is_(None), Instance.launched_at <= stop),
        _OWNED,
    )
    if project_id is not None:
        query = query.where(Instance.project_id == project_id)
    return session.execute(query).scalars()


_AUDIT_COLUMNS = (
    Instance.uuid,
    Instance.vm_state,
    Instance.task_state,
    Instance.deleted,
    Instance.created_at,
    Instance.updated_at,
    Instance.deleted_at,
    Instance.host,
    Instance.compute_node_uuid,
)


def audit_rows(session, also=()):
    """State and times, for the audit, of the instances not deleted and of
    those of ``also`` (uuids) whatever their state. A deleted instance's
    row stays until it is archived, so the rows of every instance ever
    built are not read: their number grows with every boot."""
    rows = session.execute(
        sa.select(*_AUDIT_COLUMNS).where(
            Instance.deleted.is_(False),
            Instance.vm_state != states.DELETED,
            _OWNED,
        )
    ).all()
    seen = {row.uuid for row in rows}
    for chunk in chunks.chunked(set(also) - seen):
        rows += session.execute(
            sa.select(*_AUDIT_COLUMNS).where(Instance.uuid.in_(chunk))
        ).all()
    return rows


def existing(session, instance_uuids):
    """The uuids among ``instance_uuids`` that have a row here, deleted
    or not."""
    found = set()
    for chunk in chunks.chunked(instance_uuids):
        found.update(
            session.execute(
                sa.select(Instance.uuid).where(Instance.uuid.in_(chunk))
            ).scalars()
        )
    return found


def state_of(session, instance_uuid):
    """``(vm_state, task_state, host, deleted)`` of one instance, or
    None."""
    return session.execute(
        sa.select(
            Instance.vm_state,
            Instance.task_state,
            Instance.host,
            Instance.deleted,
        ).where(Instance.uuid == instance_uuid)
    ).first()


def building_on_hosts(session):
    """``[(uuid, host, node, created_at, updated_at, task_state)]`` of the
    live instances building, on a host or (host None) between the host a
    build check took them from and their next alternate."""
    return session.execute(
        sa.select(
            Instance.uuid,
            Instance.host,
            Instance.node,
            Instance.created_at,
            Instance.updated_at,
            Instance.task_state,
        ).where(
            Instance.vm_state == states.BUILDING, Instance.deleted.is_(False)
        )
    ).all()


def page(
    session,
    *,
    project_id,
    filters,
    column_filters,
    name,
    sort_key,
    null_default,
    reverse,
    after,
    limit,
):
    """One keyset batch of a server list, in order (``GET /servers``): rows
    of the :data:`SHOWN` columns.

    ``session``: a session or a connection of one cell's database.
    ``filters``: ``deleted`` (False by default; None for live and deleted
    alike), ``changes_since``/``changes_before``, and the equality filters
    named in ``column_filters``; ``name`` a regular expression on the
    display name; sorted on ``sort_key`` (nulls as ``null_default``) then
    uuid, descending with ``reverse``; ``after`` the ``(sort value, uuid)``
    of the previous batch's last row, or None.

    The statement is Core (no ORM entity is built per row), made once per
    shape of the query (which filters, which sort) with the values bound
    at execution: a watcher polling the same list every fraction of a
    second builds it once.
    """
    deleted = filters.get('deleted', False)
    present = tuple(
        key for key in column_filters if filters.get(key) is not None
    )
    shape = (
        deleted,
        filters.get('changes_since') is not None,
        filters.get('changes_before') is not None,
        project_id is not None,
        present,
        name is not None,
        after is not None,
        sort_key,
        null_default,
        reverse,
    )
    statement = _PAGES.get(shape)
    if statement is None:
        statement = _PAGES.setdefault(shape, _page_statement(*shape))
    values = {'limit': limit}
    for key in ('changes_since', 'changes_before', *present):
        if filters.get(key) is not None:
            values[key] = filters[key]
    if project_id is not None:
        values['project_id'] = project_id
    if name is not None:
        values['name'] = name
    if after is not None:
        values['after_value'], values['after_uuid'] = after
    return session.execute(statement, values).all()


# Statements of :func:`page` by the shape of their query.
_PAGES = {}
_TABLE = Instance.__table__
_SHOWN_COLUMNS = tuple(_TABLE.c[column.key] for column in SHOWN)


def _page_statement(
    deleted,
    since,
    before,
    by_project,
    present,
    by_name,
    after,
    sort_key,
    null_default,
    reverse,
):
    c = _TABLE.c
    column = c[sort_key]
    expr = (
        column
        if sort_key == 'uuid'
        else sa.func.coalesce(column, sa.literal(null_default, column.type))
    )
    query = sa.select(*_SHOWN_COLUMNS).where(c.hidden.is_(False))
    if deleted is not None:
        query = query.where(c.deleted.is_(deleted))
    changed = sa.func.coalesce(c.updated_at, c.created_at)
    if since:
        query = query.where(
            changed >= sa.bindparam('changes_since', type_=c.updated_at.type)
        )
    if before:
        query = query.where(
            changed <= sa.bindparam('changes_before', type_=c.updated_at.type)
        )
    if by_project:
        query = query.where(c.project_id == sa.bindparam('project_id'))
    for key in present:
        query = query.where(c[key] == sa.bindparam(key, type_=c[key].type))
    if by_name:
        query = query.where(
            c.display_name.regexp_match(sa.bindparam('name', type_=sa.String))
        )
    if after:
        value = sa.bindparam('after_value', type_=column.type)
        uuid = sa.bindparam('after_uuid', type_=c.uuid.type)
        beyond = (expr < value) if reverse else (expr > value)
        tie = (c.uuid < uuid) if reverse else (c.uuid > uuid)
        query = query.where(sa.or_(beyond, sa.and_(expr == value, tie)))
    order = (
        (expr.desc(), c.uuid.desc()) if reverse else (expr.asc(), c.uuid.asc())
    )
    return query.order_by(*order).limit(
        sa.bindparam('limit', type_=sa.Integer)
    )


def names_on_node(session, host, node):
    """``[(uuid, display_name)]`` of the live instances on one node."""
    return session.execute(
        sa.select(Instance.uuid, Instance.display_name).where(
            Instance.host == host,
            Instance.node == node,
            Instance.deleted.is_(False),
            _OWNED,
        )
    ).all()
