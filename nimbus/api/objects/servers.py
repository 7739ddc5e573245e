"""Servers across the API database (build requests) and the cells.

A server is a build request (API database, no cell yet) until the super
conductor creates its instance in a cell (or in cell0 when it could not be
placed). This module finds, lists, creates and deletes servers wherever
they are and hands the handlers one plain record shape (see
:func:`from_instance` and :func:`from_build_request`); listing is in
:mod:`nimbus.api.objects.server_list`.
"""

import datetime

from oslo_log import log as logging

from nimbus.common import cells as cell_queries
from nimbus.common import instance_states as states
from nimbus.common.objects import BuildRequest
from nimbus.common.objects import RequestSpec
from nimbus.db import build_requests
from nimbus.db import cell_instances
from nimbus.db import instance_mappings
from nimbus.db import request_specs
from nimbus.db import server_groups
from nimbus.db.cell_instances import queries as instance_queries

LOG = logging.getLogger(__name__)


class CellUnreachable(Exception):
    """A cell database did not answer (in time): ``cell`` is its
    :class:`~nimbus.db.cells.Cell`, ``mapping`` the server's instance
    mapping."""

    def __init__(self, cell, mapping=None):
        super().__init__(cell.name)
        self.cell = cell
        self.mapping = mapping


class ServerNotFound(Exception):
    pass


def _parse_time(value):
    if value is None or isinstance(value, datetime.datetime):
        return value
    return datetime.datetime.fromisoformat(value.rstrip('Z'))


def from_build_request(instance):
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


# Deliberately like db.cell_instances.to_dict: that is the cell's wire form
# (ISO times, what a compute needs); this the API's record (datetimes, the
# server attributes, the cell and the fault).
def from_instance(row, cell, fault=None):
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
            'compute_node_uuid': row.compute_node_uuid,
            'instance_group_uuid': row.instance_group_uuid,
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
            'deleted_at': row.deleted_at,
            'locked_by': row.locked_by,
            'locked_reason': row.locked_reason,
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


def faults_of(session, uuids):
    rows = instance_queries.faults(session, uuids, by_time=True)
    return {r.instance_uuid: _fault_dict(r) for r in rows}


# -- create ------------------------------------------------------------------


def create_build_requests(api_db, instances, request_spec, group_uuid=None):
    """Store build requests, the request spec and instance mappings.

    ``instances`` are the build request dicts (``uuid`` first), stored as
    BuildRequest primitives; ``request_spec`` is a RequestSpec. All rows
    are written in one transaction; the instances join ``group_uuid``.
    """
    with api_db.session() as session:
        # Core inserts, one statement per table (no ORM unit of work).
        request_specs.insert_many(
            session, [i['uuid'] for i in instances], request_spec
        )
        build_requests.insert_many(
            session, [BuildRequest.from_primitive(i) for i in instances]
        )
        instance_mappings.insert_many(
            session,
            [
                (i['uuid'], i['project_id'], i.get('user_id'))
                for i in instances
            ],
        )
        if group_uuid is not None:
            server_groups.add_members(
                session, group_uuid, [i['uuid'] for i in instances]
            )


def undo_build_requests(api_db, uuids):
    """Remove what :func:`create_build_requests` wrote (cast failed)."""
    with api_db.session() as session:
        build_requests.delete(session, uuids)
        request_specs.delete(session, uuids)
        instance_mappings.delete(session, uuids)
        server_groups.remove_members(session, uuids)


# -- find --------------------------------------------------------------------


def mapping_of(api_db, uuid):
    with api_db.session() as session:
        return instance_mappings.get(session, uuid)


def build_request_of(api_db, uuid):
    with api_db.session() as session:
        row = build_requests.get(session, uuid)
        return None if row is None else row.instance


def instance_of(cells, cell, uuid):
    with cells.db(cell).session() as session:
        row = instance_queries.shown(session, uuid)
        if row is None:
            return None
        record = from_instance(row, cell, faults_of(session, [uuid]).get(uuid))
        # The copy a cross-cell move hides (its mapping is switching).
        record['hidden'] = bool(row.hidden)
        return record


def get(api_db, cells, uuid, queries=None):
    """The server record, or :class:`ServerNotFound`, or
    :class:`CellUnreachable` when its cell's database errs or does not
    answer within the deadline of ``queries`` (a
    :class:`nimbus.common.cells.CellQueries`; None: no deadline).

    Retries when the build request disappears between reading the
    mapping and reading it (the conductor just moved it to a cell), and
    when the cell read holds no row or a hidden one (a cross-cell move
    switched the mapping meanwhile).
    """
    queries = queries or cell_queries.Direct()
    for _attempt in range(3):
        mapping = mapping_of(api_db, uuid)
        if mapping is None:
            raise ServerNotFound(uuid)
        if mapping.cell_id is None:
            instance = build_request_of(api_db, uuid)
            if instance is not None:
                return from_build_request(instance)
            continue
        cell = cells.by_id(mapping.cell_id)
        try:
            record = queries.call(cell, lambda c: instance_of(cells, c, uuid))
        except cell_queries.CellDown as exc:
            raise CellUnreachable(cell, mapping) from exc
        moved = record is None or record['hidden']
        if moved and _remapped(api_db, mapping):
            continue  # a cross-cell move switched cells meanwhile
        if record is None or record['deleted']:
            raise ServerNotFound(uuid)
        return record
    raise ServerNotFound(uuid)


def _remapped(api_db, mapping):
    """Whether the instance's mapping points at another cell than
    ``mapping`` said."""
    now = mapping_of(api_db, mapping.instance_uuid)
    return now is not None and now.cell_id != mapping.cell_id


def minimal_of(api_db, mapping, cell):
    """What the API database knows of a server whose cell is down: the
    instance mapping (project, user, creation time) and the request spec
    (flavor, image, requested zone). The record has ``minimal`` set and
    no ``vm_state``; the views show it as Nova's down-cell construct."""
    spec = None
    with api_db.session() as session:
        primitive = request_specs.get(session, mapping.instance_uuid)
    if primitive is not None:
        try:
            spec = RequestSpec.from_primitive(primitive)
        except ValueError:
            LOG.warning(
                'The request spec of %s is unreadable', mapping.instance_uuid
            )
    return {
        'uuid': mapping.instance_uuid,
        'minimal': True,
        'project_id': mapping.project_id,
        'user_id': mapping.user_id or (spec.user_id if spec else None),
        'created_at': mapping.created_at,
        'updated_at': None,
        'flavor': spec.flavor.to_primitive() if spec else {},
        'image_ref': spec.image.id if spec and spec.image else None,
        'availability_zone': spec.availability_zone if spec else None,
        'vm_state': None,
        'task_state': None,
        'deleted': False,
        'cell': cell,
        'fault': None,
    }


# -- delete ------------------------------------------------------------------


def delete_build_request(api_db, uuid):
    """Delete an unscheduled server; False if it already left for a cell."""
    with api_db.session() as session:
        if not build_requests.delete(session, [uuid]):
            return False
        request_specs.delete(session, [uuid])
        server_groups.remove_members(session, [uuid])
        instance_mappings.delete(session, [uuid], only_unmapped=True)
        return True


def queue_for_delete(api_db, uuid):
    with api_db.session() as session:
        instance_mappings.queue_for_delete(session, uuid)
        server_groups.remove_members(session, [uuid])


def mark_deleted(cells, cell, uuid, now):
    """Mark the instance deleted in its cell (compare-and-swap)."""
    with cells.db(cell).session() as session:
        row = cell_instances.transition(
            session,
            uuid,
            states.sources_of(states.DELETED),
            {
                'vm_state': states.DELETED,
                'task_state': None,
                'deleted': True,
                'deleted_at': now,
                'terminated_at': now,
            },
        )
        return row is not None


def mark_deleting(cells, cell, uuid):
    """Set task_state deleting; False when already deleted."""
    with cells.db(cell).session() as session:
        row = cell_instances.transition(
            session,
            uuid,
            [s for s in states.VM_STATES if s != states.DELETED],
            {'task_state': states.DELETING},
        )
        return row is not None


def hosts_of(api_db, cells, uuids):
    """The hosts of the given instances (for server group hosts)."""
    if not uuids:
        return []
    with api_db.session() as session:
        rows = instance_mappings.cells_of(session, uuids)
    by_cell = {}
    for uuid, cell_id in rows:
        by_cell.setdefault(cell_id, []).append(uuid)
    hosts = set()
    for cell_id, cell_uuids in by_cell.items():
        cell = cells.by_id(cell_id)
        with cells.db(cell).session() as session:
            hosts.update(instance_queries.live_hosts(session, cell_uuids))
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
            if build_requests.update_instance(session, record['uuid'], values):
                return True
        # It left for a cell meanwhile: read where it is now.
        try:
            record = get(api_db, cells, record['uuid'])
        except ServerNotFound:
            return False
        if record['cell'] is None:
            return False
    with cells.db(record['cell']).session() as session:
        return cell_instances.update_attributes(
            session, record['uuid'], values
        )
