"""Listing servers: one page of build requests and cell instances, merged and
sorted across cells (``GET /servers`` and ``/servers/detail``).

The cells are asked at once, each within the deadline of a
:class:`nimbus.common.cells.CellQueries` (``[api] cell_timeout``); a cell
that errs or does not answer in time is down for the request, and its
servers are left out, or (``minimal``, microversion 2.69) stand in the
page as minimal records read from the API database's instance mappings.
"""

import datetime
import functools
import heapq
import re

from oslo_log import log as logging

from nimbus.api.objects import servers
from nimbus.common import cells as cell_queries
from nimbus.common import instance_states as states
from nimbus.db import build_requests
from nimbus.db import instance_mappings
from nimbus.db.cell_instances import queries as instance_queries

LOG = logging.getLogger(__name__)

_EPOCH = datetime.datetime(1970, 1, 1)
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


class MarkerUnreachable(Exception):
    """The marker's cell is down and the sort key is not one the API
    database knows (``created_at``, ``uuid``)."""


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
    queries=None,
    minimal=False,
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

    ``queries`` (a :class:`nimbus.common.cells.CellQueries`; None: no
    deadline) asks the cells. ``minimal``: the servers of a cell that is
    down join the page as minimal records (``minimal`` set: uuid,
    project, user, the mapping's creation time), the way Nova answers from
    microversion 2.69 to a list with no filter, sort or paging parameter;
    they are merged by creation time, so only the default order
    (``created_at`` descending) suits them.

    Returns ``(records, more, unreachable)``: ``unreachable`` names the
    cells that were down. Raises :class:`MarkerNotFound`,
    :class:`MarkerUnreachable`.
    """
    queries = queries or cell_queries.Direct()
    filters = dict(filters or {})
    reverse = sort_dir == 'desc'
    marker_key = None
    if marker is not None:
        marker_key = _marker_key(api_db, cells, marker, sort_key, queries)
    batch = limit + 1 if where is None else max(limit + 1, 200)
    query_of = functools.partial(
        _cell_query, project_id, filters, sort_key, reverse, name, batch
    )
    # Build requests before the cells: a server whose instance the super
    # conductor creates in its cell (deleting its build request) between
    # the two reads is then in both (one is dropped below), never in
    # neither.
    building = _build_request_rows(
        api_db, project_id, filters, sort_key, reverse, marker_key, name, where
    )
    every = cells.cells()
    first, down = queries.gather(
        every, lambda cell: _read(cells, cell, query_of(marker_key))
    )
    unreachable = [cell.name for cell in every if cell in down]
    sources = [
        _cell_rows(
            cells,
            cell,
            first[cell],
            query_of,
            batch,
            sort_key,
            where,
            queries,
            unreachable,
        )
        for cell in every
        if cell in first
    ]
    sources.append(building)
    if minimal and down:
        sources.append(
            _minimal_rows(api_db, list(down), project_id, limit + 1)
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
    _attach_faults(cells, page, queries)
    return page, more, unreachable


def _marker_key(api_db, cells, uuid, sort_key, queries):
    instance = servers.build_request_of(api_db, uuid)
    if instance is not None:
        return _record_key(sort_key)(servers.from_build_request(instance))
    mapping = servers.mapping_of(api_db, uuid)
    if mapping is None or mapping.cell_id is None:
        raise MarkerNotFound(uuid)
    cell = cells.by_id(mapping.cell_id)
    try:
        record = queries.call(
            cell, lambda c: servers.instance_of(cells, c, uuid)
        )
    except cell_queries.CellDown as exc:
        if sort_key not in ('created_at', 'uuid'):
            raise MarkerUnreachable(cell.name) from exc
        # Where its minimal record stood on the page before.
        record = {'uuid': uuid, 'created_at': mapping.created_at}
    if record is None:
        raise MarkerNotFound(uuid)
    return _record_key(sort_key)(record)


def _cell_query(project_id, filters, sort_key, reverse, name, batch, after):
    """One batch of a cell's matching instances in order, after the keyset
    ``after`` (a ``(value, uuid)`` pair) if given: the arguments of
    :func:`nimbus.db.cell_instances.queries.page`."""
    return {
        'project_id': project_id,
        'filters': filters,
        'column_filters': _COLUMN_FILTERS,
        'name': name,
        'sort_key': sort_key,
        'null_default': _null_default(sort_key),
        'reverse': reverse,
        'after': after,
        'limit': batch,
    }


def _read(cells, cell, query):
    # A connection, not a session: one read, no ORM object (it ends with
    # the rollback of its return to the pool).
    with cells.db(cell).engine.connect() as connection:
        rows = instance_queries.page(connection, **query)
    return [servers.from_instance(r, cell) for r in rows]


def _cell_rows(
    cells, cell, rows, query_of, batch, sort_key, where, queries, unreachable
):
    """The cell's matching instances in order: the first batch ``rows``,
    then further batches while ``where`` leaves the page short."""
    while True:
        for record in rows:
            if where is None or where(record):
                yield record
        if len(rows) < batch:
            return
        after = _record_key(sort_key)(rows[-1])
        try:
            rows = queries.call(
                cell, lambda c, after=after: _read(cells, c, query_of(after))
            )
        except cell_queries.CellDown:
            unreachable.append(cell.name)
            return


def _minimal_rows(api_db, down, project_id, count):
    """Minimal records of the live servers of the ``down`` cells, newest
    first, from their instance mappings."""
    by_id = {cell.id: cell for cell in down}
    with api_db.session() as session:
        rows = instance_mappings.live_in_cells(
            session, list(by_id), project_id, count
        )
    return [
        {
            'uuid': row.instance_uuid,
            'minimal': True,
            'project_id': row.project_id,
            'user_id': row.user_id,
            'created_at': row.created_at,
            'vm_state': None,
            'cell': by_id[row.cell_id],
            'fault': None,
        }
        for row in rows
    ]


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
    with api_db.engine.connect() as connection:
        instances = build_requests.instances_of_project(connection, project_id)
    records = [servers.from_build_request(i) for i in instances]
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


def _attach_faults(cells, page, queries):
    by_cell = {}
    for record in page:
        if record['cell'] is not None and record['vm_state'] == states.ERROR:
            by_cell.setdefault(record['cell'], []).append(record)
    if not by_cell:
        return

    def read(cell):
        with cells.db(cell).session() as session:
            return servers.faults_of(
                session, [r['uuid'] for r in by_cell[cell]]
            )

    answers, _down = queries.gather(list(by_cell), read)
    for cell, records in by_cell.items():
        faults = answers.get(cell)
        if faults is None:
            LOG.warning('Could not read the faults of cell %s', cell.name)
            continue
        for record in records:
            record['fault'] = faults.get(record['uuid'])
