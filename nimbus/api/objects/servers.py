"""Servers across the API database (build requests) and the cells.

A server is a build request (API database, no cell yet) until the super
conductor creates its instance in a cell (or in cell0 when it could not be
placed). This module finds, lists, creates and deletes servers wherever
they are and hands the handlers one plain record shape (see
:func:`_from_instance` and :func:`_from_build_request`).
"""

import datetime
import heapq
import re

from oslo_log import log as logging
import sqlalchemy as sa

from nimbus.common import instance_states as states
from nimbus.common.objects import BuildRequest
from nimbus.db.api import models as api_models
from nimbus.db.cell import models as cell_models

LOG = logging.getLogger(__name__)


class ServerNotFound(Exception):
    pass


def _parse_time(value):
    if value is None or isinstance(value, datetime.datetime):
        return value
    return datetime.datetime.fromisoformat(value.rstrip('Z'))


def _from_build_request(instance):
    record = dict(instance)
    record.setdefault('vm_state', states.BUILDING)
    record.setdefault('task_state', states.SCHEDULING)
    record['created_at'] = _parse_time(record.get('created_at'))
    record['updated_at'] = _parse_time(record.get('updated_at'))
    record.update(
        host=None,
        node=None,
        cell=None,
        fault=None,
        launched_at=None,
        terminated_at=None,
        deleted=False,
        power_state=0,
        metadata=(
            record.get('metadata') or record.get('metadata_items') or {}
        ),
    )
    return record


def _from_instance(row, cell, fault=None):
    extra = row.metadata_items or {}
    record = dict(row.server_attributes or {})
    record.update(
        {
            'uuid': row.uuid,
            'display_name': row.display_name,
            'project_id': row.project_id,
            'user_id': row.user_id,
            'host': row.host,
            'node': row.node,
            'vm_state': row.vm_state,
            'task_state': row.task_state,
            'power_state': row.power_state,
            'flavor': row.flavor or {},
            'image_ref': row.image_ref,
            'availability_zone': row.availability_zone,
            'metadata': extra,
            'created_at': row.created_at,
            'updated_at': row.updated_at,
            'launched_at': row.launched_at,
            'terminated_at': row.terminated_at,
            'deleted': row.deleted,
            'cell': cell,
            'fault': fault,
        }
    )
    return record


def _fault_dict(row):
    if row is None:
        return None
    return {
        'code': row.code,
        'message': row.message,
        'details': row.details,
        'created': row.created_at,
        'host': row.host,
    }


def _faults(session, uuids):
    if not uuids:
        return {}
    rows = session.execute(
        sa.select(cell_models.InstanceFault)
        .where(cell_models.InstanceFault.instance_uuid.in_(uuids))
        .order_by(
            cell_models.InstanceFault.created_at.asc(),
            cell_models.InstanceFault.id.asc(),
        )
    ).scalars()
    return {r.instance_uuid: _fault_dict(r) for r in rows}


# -- create ------------------------------------------------------------------


def create_build_requests(api_db, instances, request_spec, group_uuid=None):
    """Store build requests, the request spec and instance mappings.

    ``instances`` are the build request dicts (``uuid`` first), stored as
    BuildRequest primitives; ``request_spec`` is a RequestSpec. All rows
    are written in one transaction; the instances join ``group_uuid``.
    """
    spec = request_spec.to_primitive()
    with api_db.session() as session:
        for instance in instances:
            session.add(
                api_models.BuildRequest(
                    instance_uuid=instance['uuid'],
                    project_id=instance['project_id'],
                    user_id=instance.get('user_id'),
                    instance=BuildRequest.from_primitive(
                        instance
                    ).to_primitive(),
                )
            )
            session.add(
                api_models.RequestSpec(
                    instance_uuid=instance['uuid'], spec=spec
                )
            )
            session.add(
                api_models.InstanceMapping(
                    instance_uuid=instance['uuid'],
                    cell_id=None,
                    project_id=instance['project_id'],
                    user_id=instance.get('user_id'),
                )
            )
        if group_uuid is not None:
            group = session.execute(
                sa.select(api_models.InstanceGroup).where(
                    api_models.InstanceGroup.uuid == group_uuid
                )
            ).scalar()
            for instance in instances:
                group.members.append(
                    api_models.InstanceGroupMember(
                        instance_uuid=instance['uuid']
                    )
                )


def undo_build_requests(api_db, uuids):
    """Remove what :func:`create_build_requests` wrote (cast failed)."""
    with api_db.session() as session:
        for model in (
            api_models.BuildRequest,
            api_models.RequestSpec,
            api_models.InstanceMapping,
            api_models.InstanceGroupMember,
        ):
            session.execute(
                sa.delete(model).where(model.instance_uuid.in_(uuids))
            )


# -- find --------------------------------------------------------------------


def _mapping(api_db, uuid):
    with api_db.session() as session:
        return session.execute(
            sa.select(api_models.InstanceMapping).where(
                api_models.InstanceMapping.instance_uuid == uuid
            )
        ).scalar()


def _build_request(api_db, uuid):
    with api_db.session() as session:
        row = session.execute(
            sa.select(api_models.BuildRequest).where(
                api_models.BuildRequest.instance_uuid == uuid
            )
        ).scalar()
        return None if row is None else row.instance


def _instance(cells, cell, uuid):
    with cells.db(cell).session() as session:
        row = session.execute(
            sa.select(cell_models.Instance).where(
                cell_models.Instance.uuid == uuid
            )
        ).scalar()
        if row is None:
            return None
        return _from_instance(row, cell, _faults(session, [uuid]).get(uuid))


def get(api_db, cells, uuid):
    """The server record, or :class:`ServerNotFound`.

    Retries once when the build request disappears between reading the
    mapping and reading it (the conductor just moved it to a cell).
    """
    for _attempt in range(2):
        mapping = _mapping(api_db, uuid)
        if mapping is None:
            raise ServerNotFound(uuid)
        if mapping.cell_id is None:
            instance = _build_request(api_db, uuid)
            if instance is not None:
                return _from_build_request(instance)
            continue
        cell = cells.by_id(mapping.cell_id)
        try:
            record = _instance(cells, cell, uuid)
        except Exception as exc:
            LOG.warning('Cell %s is unreachable: %s', cell.name, exc)
            raise CellUnreachable(cell.name)
        if record is None or record['deleted']:
            raise ServerNotFound(uuid)
        return record
    raise ServerNotFound(uuid)


# -- list --------------------------------------------------------------------

_EPOCH = datetime.datetime(1970, 1, 1)
SORT_KEYS = (
    'created_at',
    'display_name',
    'uuid',
    'updated_at',
    'host',
    'vm_state',
    'availability_zone',
)
# Equality filters that are instance columns (pushed into each cell's SQL).
_COLUMN_FILTERS = (
    'host',
    'node',
    'vm_state',
    'user_id',
    'image_ref',
    'availability_zone',
)


class MarkerNotFound(Exception):
    pass


class CellUnreachable(Exception):
    """A cell database did not answer."""


def _null_default(sort_key):
    return _EPOCH if sort_key.endswith('_at') else ''


def _record_key(sort_key):
    default = _null_default(sort_key)
    return lambda r: (r.get(sort_key) or default, r['uuid'])


def list_page(
    api_db,
    cells,
    project_id=None,
    filters=None,
    sort_key='created_at',
    sort_dir='desc',
    limit=1000,
    marker=None,
    name=None,
    where=None,
):
    """One page of servers: build requests and every cell, merge-sorted.

    Each cell answers its part in SQL: ``project_id``, the equality
    ``filters`` (``host``, ``node``, ``vm_state``, ``user_id``,
    ``image_ref``, ``availability_zone``; ``deleted`` a bool, or None for
    both), the ``changes_since``/``changes_before`` window on
    ``updated_at`` (else ``created_at``; naive UTC), ``name`` (a
    regular expression), the sort on ``(sort_key, uuid)``, the marker as a
    keyset condition and the limit. ``where`` is a predicate on records
    for filters no column holds (flavor id); with it a cell is read in
    batches until the page is full. The sources are merged, so at most
    ``limit + 1`` rows are read per source in the common case.

    Returns ``(records, more, unreachable)``: ``unreachable`` names the
    cells whose database did not answer; their servers are left out.
    Raises :class:`MarkerNotFound`.
    """
    filters = dict(filters or {})
    reverse = sort_dir == 'desc'
    marker_key = None
    if marker is not None:
        marker_key = _marker_key(api_db, cells, marker, sort_key)
    unreachable = []
    sources = [
        _cell_rows(
            cells,
            cell,
            project_id,
            filters,
            sort_key,
            reverse,
            limit,
            marker_key,
            name,
            where,
            unreachable,
        )
        for cell in cells.cells()
    ]
    sources.append(
        _build_request_rows(
            api_db,
            project_id,
            filters,
            sort_key,
            reverse,
            marker_key,
            name,
            where,
        )
    )
    page, seen = [], set()
    for record in heapq.merge(
        *sources, key=_record_key(sort_key), reverse=reverse
    ):
        if record['uuid'] in seen:
            continue  # a build request whose instance is already in a cell
        seen.add(record['uuid'])
        page.append(record)
        if len(page) > limit:
            break
    more = len(page) > limit
    page = page[:limit]
    _attach_faults(cells, page)
    return page, more, unreachable


def _marker_key(api_db, cells, uuid, sort_key):
    instance = _build_request(api_db, uuid)
    if instance is not None:
        record = _from_build_request(instance)
    else:
        mapping = _mapping(api_db, uuid)
        if mapping is None or mapping.cell_id is None:
            raise MarkerNotFound(uuid)
        try:
            record = _instance(cells, cells.by_id(mapping.cell_id), uuid)
        except Exception:
            raise MarkerNotFound(uuid)
        if record is None:
            raise MarkerNotFound(uuid)
    return _record_key(sort_key)(record)


def _sql_filters(query, project_id, filters, name):
    model = cell_models.Instance
    deleted = filters.get('deleted', False)
    if deleted is not None:  # None: live and deleted alike
        query = query.where(model.deleted.is_(deleted))
    changed = sa.func.coalesce(model.updated_at, model.created_at)
    if filters.get('changes_since') is not None:
        query = query.where(changed >= filters['changes_since'])
    if filters.get('changes_before') is not None:
        query = query.where(changed <= filters['changes_before'])
    if project_id is not None:
        query = query.where(model.project_id == project_id)
    for key in _COLUMN_FILTERS:
        if filters.get(key) is not None:
            query = query.where(getattr(model, key) == filters[key])
    if name is not None:
        query = query.where(model.display_name.regexp_match(name))
    return query


def _cell_rows(
    cells,
    cell,
    project_id,
    filters,
    sort_key,
    reverse,
    limit,
    marker_key,
    name,
    where,
    unreachable,
):
    """The cell's matching instances in order, read in keyset batches."""
    model = cell_models.Instance
    column = getattr(model, sort_key)
    expr = (
        column
        if sort_key == 'uuid'
        else sa.func.coalesce(
            column, sa.literal(_null_default(sort_key), column.type)
        )
    )
    order = (
        (expr.desc(), model.uuid.desc())
        if reverse
        else (expr.asc(), model.uuid.asc())
    )
    batch = limit + 1 if where is None else max(limit + 1, 200)
    after = marker_key
    while True:
        query = _sql_filters(sa.select(model), project_id, filters, name)
        if after is not None:
            value, uuid = after
            beyond = (expr < value) if reverse else (expr > value)
            tie = (model.uuid < uuid) if reverse else (model.uuid > uuid)
            query = query.where(sa.or_(beyond, sa.and_(expr == value, tie)))
        try:
            with cells.db(cell).session() as session:
                rows = [
                    _from_instance(r, cell)
                    for r in session.execute(
                        query.order_by(*order).limit(batch)
                    ).scalars()
                ]
        except Exception as exc:
            LOG.warning(
                'Cell %s is unreachable (%s); its servers are left '
                'out of the list',
                cell.name,
                exc,
            )
            unreachable.append(cell.name)
            return
        for record in rows:
            if where is None or where(record):
                yield record
        if len(rows) < batch:
            return
        after = _record_key(sort_key)(rows[-1])


def _in_change_window(record, filters):
    updated = record.get('updated_at') or record.get('created_at')
    since = filters.get('changes_since')
    before = filters.get('changes_before')
    if updated is None:
        return since is None and before is None
    return (since is None or updated >= since) and (
        before is None or updated <= before
    )


def _build_request_rows(
    api_db, project_id, filters, sort_key, reverse, marker_key, name, where
):
    if (
        filters.get('deleted')
        or filters.get('host')
        or filters.get('node')
        or filters.get('vm_state') not in (None, states.BUILDING)
    ):
        return []
    with api_db.session() as session:
        query = sa.select(api_models.BuildRequest)
        if project_id is not None:
            query = query.where(
                api_models.BuildRequest.project_id == project_id
            )
        records = [
            _from_build_request(r.instance)
            for r in session.execute(query).scalars()
        ]
    pattern = re.compile(name) if name is not None else None
    keep = []
    for record in records:
        if any(
            filters.get(key) not in (None, record.get(key))
            for key in ('user_id', 'image_ref', 'availability_zone')
        ):
            continue
        if pattern and not pattern.search(record.get('display_name') or ''):
            continue
        if not _in_change_window(record, filters):
            continue
        if where is not None and not where(record):
            continue
        keep.append(record)
    key = _record_key(sort_key)
    keep.sort(key=key, reverse=reverse)
    if marker_key is not None:
        keep = [
            r
            for r in keep
            if (key(r) < marker_key if reverse else key(r) > marker_key)
        ]
    return keep


def _attach_faults(cells, page):
    by_cell = {}
    for record in page:
        if record['cell'] is not None and record['vm_state'] == states.ERROR:
            by_cell.setdefault(record['cell'], []).append(record)
    for cell, records in by_cell.items():
        try:
            with cells.db(cell).session() as session:
                faults = _faults(session, [r['uuid'] for r in records])
        except Exception:
            LOG.warning('Could not read the faults of cell %s', cell.name)
            continue
        for record in records:
            record['fault'] = faults.get(record['uuid'])


# -- delete ------------------------------------------------------------------


def delete_build_request(api_db, uuid):
    """Delete an unscheduled server; False if it already left for a cell."""
    with api_db.session() as session:
        result = session.execute(
            sa.delete(api_models.BuildRequest).where(
                api_models.BuildRequest.instance_uuid == uuid
            )
        )
        if not result.rowcount:
            return False
        for model in (api_models.RequestSpec, api_models.InstanceGroupMember):
            session.execute(
                sa.delete(model).where(model.instance_uuid == uuid)
            )
        session.execute(
            sa.delete(api_models.InstanceMapping).where(
                api_models.InstanceMapping.instance_uuid == uuid,
                api_models.InstanceMapping.cell_id.is_(None),
            )
        )
        return True


def queue_for_delete(api_db, uuid):
    with api_db.session() as session:
        session.execute(
            sa.update(api_models.InstanceMapping)
            .where(api_models.InstanceMapping.instance_uuid == uuid)
            .values(queued_for_delete=True)
        )
        session.execute(
            sa.delete(api_models.InstanceGroupMember).where(
                api_models.InstanceGroupMember.instance_uuid == uuid
            )
        )


def mark_deleted(cells, cell, uuid, now):
    """Mark the instance deleted in its cell (compare-and-swap)."""
    with cells.db(cell).session() as session:
        result = session.execute(
            sa.update(cell_models.Instance)
            .where(
                cell_models.Instance.uuid == uuid,
                cell_models.Instance.vm_state.in_(
                    states.sources_of(states.DELETED)
                ),
                cell_models.Instance.deleted.is_(False),
            )
            .values(
                vm_state=states.DELETED,
                task_state=None,
                deleted=True,
                deleted_at=now,
                terminated_at=now,
            )
        )
        return bool(result.rowcount)


def mark_deleting(cells, cell, uuid):
    """Set task_state deleting; False when already deleted."""
    with cells.db(cell).session() as session:
        result = session.execute(
            sa.update(cell_models.Instance)
            .where(
                cell_models.Instance.uuid == uuid,
                cell_models.Instance.deleted.is_(False),
                cell_models.Instance.vm_state != states.DELETED,
            )
            .values(task_state=states.DELETING)
        )
        return bool(result.rowcount)


def hosts_of(api_db, cells, uuids):
    """The hosts of the given instances (for server group hosts)."""
    if not uuids:
        return []
    with api_db.session() as session:
        rows = session.execute(
            sa.select(
                api_models.InstanceMapping.instance_uuid,
                api_models.InstanceMapping.cell_id,
            ).where(
                api_models.InstanceMapping.instance_uuid.in_(uuids),
                api_models.InstanceMapping.cell_id.is_not(None),
            )
        ).all()
    by_cell = {}
    for uuid, cell_id in rows:
        by_cell.setdefault(cell_id, []).append(uuid)
    hosts = set()
    for cell_id, cell_uuids in by_cell.items():
        cell = cells.by_id(cell_id)
        with cells.db(cell).session() as session:
            hosts.update(
                h
                for (h,) in session.execute(
                    sa.select(cell_models.Instance.host).where(
                        cell_models.Instance.uuid.in_(cell_uuids),
                        cell_models.Instance.deleted.is_(False),
                    )
                ).all()
                if h
            )
    return sorted(hosts)


# What PUT /servers/{id} may change: the record's key -> where a cell keeps
# it (a column, else the instance's ``server_attributes``).
UPDATABLE = (
    'display_name',
    'description',
    'access_ip_v4',
    'access_ip_v6',
    'hostname',
)


def update(api_db, cells, record, values):
    """Apply ``values`` (keys of :data:`UPDATABLE`) to the server, a build
    request or a cell's instance; False when it is gone."""
    if record['cell'] is None:
        with api_db.session() as session:
            row = session.execute(
                sa.select(api_models.BuildRequest).where(
                    api_models.BuildRequest.instance_uuid == record['uuid']
                )
            ).scalar()
            if row is not None:
                row.instance = dict(row.instance, **values)
                return True
        # It left for a cell meanwhile: read where it is now.
        try:
            record = get(api_db, cells, record['uuid'])
        except ServerNotFound:
            return False
        if record['cell'] is None:
            return False
    with cells.db(record['cell']).session() as session:
        row = session.execute(
            sa.select(cell_models.Instance).where(
                cell_models.Instance.uuid == record['uuid'],
                cell_models.Instance.deleted.is_(False),
            )
        ).scalar()
        if row is None:
            return False
        attributes = dict(row.server_attributes or {})
        for key, value in values.items():
            if key == 'display_name':
                row.display_name = value
            else:
                attributes[key] = value
        row.server_attributes = attributes
        return True
