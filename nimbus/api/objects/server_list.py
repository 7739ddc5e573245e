"""Listing servers: one page of build requests and cell instances, merged and
sorted across cells (``GET /servers`` and ``/servers/detail``)."""

import datetime
import heapq
import re

from oslo_log import log as logging
import sqlalchemy as sa

from nimbus.api.objects import servers
from nimbus.common import instance_states as states
from nimbus.db.api import models as api_models
from nimbus.db.cell import models as cell_models

LOG = logging.getLogger(__name__)

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
    instance = servers.build_request_of(api_db, uuid)
    if instance is not None:
        record = servers.from_build_request(instance)
    else:
        mapping = servers.mapping_of(api_db, uuid)
        if mapping is None or mapping.cell_id is None:
            raise MarkerNotFound(uuid)
        try:
            record = servers.instance_of(
                cells, cells.by_id(mapping.cell_id), uuid
            )
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
                    servers.from_instance(r, cell)
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
            servers.from_build_request(r.instance)
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
                faults = servers.faults_of(
                    session, [r['uuid'] for r in records]
                )
        except Exception:
            LOG.warning('Could not read the faults of cell %s', cell.name)
            continue
        for record in records:
            record['fault'] = faults.get(record['uuid'])
