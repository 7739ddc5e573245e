"""Servers across the API database (build requests) and the cells.

A server is a build request (API database, no cell yet) until the super
conductor creates its instance in a cell (or in cell0 when it could not be
placed). This module finds, lists, creates and deletes servers wherever
they are and hands the handlers one plain record shape (see
:func:`_from_instance` and :func:`_from_build_request`).
"""

import datetime

import sqlalchemy as sa

from nimbus.common import instance_states as states
from nimbus.db.api import models as api_models
from nimbus.db.cell import models as cell_models


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
    record.update(host=None, node=None, cell=None, fault=None,
                  launched_at=None, terminated_at=None, deleted=False,
                  power_state=0, metadata=(record.get('metadata') or
                                           record.get('metadata_items') or {}))
    return record


def _from_instance(row, cell, fault=None):
    extra = row.metadata_items or {}
    return {
        'uuid': row.uuid, 'display_name': row.display_name,
        'project_id': row.project_id, 'user_id': row.user_id,
        'host': row.host, 'node': row.node, 'vm_state': row.vm_state,
        'task_state': row.task_state, 'power_state': row.power_state,
        'flavor': row.flavor or {}, 'image_ref': row.image_ref,
        'availability_zone': row.availability_zone,
        'metadata': extra, 'created_at': row.created_at,
        'updated_at': row.updated_at, 'launched_at': row.launched_at,
        'terminated_at': row.terminated_at, 'deleted': row.deleted,
        'cell': cell, 'fault': fault,
    }


def _fault_dict(row):
    if row is None:
        return None
    return {'code': row.code, 'message': row.message,
            'details': row.details, 'created': row.created_at,
            'host': row.host}


def _faults(session, uuids):
    if not uuids:
        return {}
    rows = session.execute(
        sa.select(cell_models.InstanceFault)
        .where(cell_models.InstanceFault.instance_uuid.in_(uuids))
        .order_by(cell_models.InstanceFault.created_at.asc(),
                  cell_models.InstanceFault.id.asc())).scalars()
    return {r.instance_uuid: _fault_dict(r) for r in rows}


# -- create ------------------------------------------------------------------

def create_build_requests(api_db, instances, request_spec, group_uuid=None):
    """Store build requests, the request spec and instance mappings.

    ``instances`` are the build request dicts (``uuid`` first). All rows
    are written in one transaction; the instances join ``group_uuid``.
    """
    with api_db.session() as session:
        for instance in instances:
            session.add(api_models.BuildRequest(
                instance_uuid=instance['uuid'],
                project_id=instance['project_id'],
                user_id=instance.get('user_id'), instance=instance))
            session.add(api_models.RequestSpec(
                instance_uuid=instance['uuid'], spec=request_spec))
            session.add(api_models.InstanceMapping(
                instance_uuid=instance['uuid'], cell_id=None,
                project_id=instance['project_id'],
                user_id=instance.get('user_id')))
        if group_uuid is not None:
            group = session.execute(sa.select(api_models.InstanceGroup).where(
                api_models.InstanceGroup.uuid == group_uuid)).scalar()
            for instance in instances:
                group.members.append(api_models.InstanceGroupMember(
                    instance_uuid=instance['uuid']))


def undo_build_requests(api_db, uuids):
    """Remove what :func:`create_build_requests` wrote (cast failed)."""
    with api_db.session() as session:
        for model in (api_models.BuildRequest, api_models.RequestSpec,
                      api_models.InstanceMapping,
                      api_models.InstanceGroupMember):
            session.execute(sa.delete(model).where(
                model.instance_uuid.in_(uuids)))


# -- find --------------------------------------------------------------------

def _mapping(api_db, uuid):
    with api_db.session() as session:
        return session.execute(sa.select(api_models.InstanceMapping).where(
            api_models.InstanceMapping.instance_uuid == uuid)).scalar()


def _build_request(api_db, uuid):
    with api_db.session() as session:
        row = session.execute(sa.select(api_models.BuildRequest).where(
            api_models.BuildRequest.instance_uuid == uuid)).scalar()
        return None if row is None else row.instance


def _instance(cells, cell, uuid):
    with cells.db(cell).session() as session:
        row = session.execute(sa.select(cell_models.Instance).where(
            cell_models.Instance.uuid == uuid)).scalar()
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
        record = _instance(cells, cell, uuid)
        if record is None or record['deleted']:
            raise ServerNotFound(uuid)
        return record
    raise ServerNotFound(uuid)


# -- list --------------------------------------------------------------------

def list_all(api_db, cells, project_id=None, filters=None):
    """Every server (build requests and cell instances), unsorted.

    ``filters``: ``host``, ``node``, ``vm_state``, ``user_id``,
    ``availability_zone``, ``image_ref``, ``deleted`` (bool).
    """
    filters = filters or {}
    records, seen = [], set()
    deleted = filters.get('deleted', False)
    for cell in cells.cells():
        with cells.db(cell).session() as session:
            query = sa.select(cell_models.Instance).where(
                cell_models.Instance.deleted.is_(deleted))
            if project_id is not None:
                query = query.where(
                    cell_models.Instance.project_id == project_id)
            for key, column in (('host', 'host'), ('node', 'node'),
                                ('vm_state', 'vm_state'),
                                ('user_id', 'user_id'),
                                ('image_ref', 'image_ref'),
                                ('availability_zone', 'availability_zone')):
                if filters.get(key) is not None:
                    query = query.where(getattr(cell_models.Instance,
                                                column) == filters[key])
            rows = list(session.execute(query).scalars())
            errored = [r.uuid for r in rows if r.vm_state == states.ERROR]
            faults = _faults(session, errored)
            for row in rows:
                seen.add(row.uuid)
                records.append(_from_instance(row, cell,
                                              faults.get(row.uuid)))
    if (deleted or filters.get('host') or filters.get('node') or
            filters.get('vm_state') not in (None, states.BUILDING)):
        return records
    with api_db.session() as session:
        query = sa.select(api_models.BuildRequest)
        if project_id is not None:
            query = query.where(api_models.BuildRequest.project_id ==
                                project_id)
        for row in session.execute(query).scalars():
            if row.instance_uuid in seen:
                continue
            record = _from_build_request(row.instance)
            if filters.get('user_id') not in (None, record.get('user_id')):
                continue
            if filters.get('image_ref') not in (None,
                                                record.get('image_ref')):
                continue
            if filters.get('availability_zone') not in (
                    None, record.get('availability_zone')):
                continue
            records.append(record)
    return records


# -- delete ------------------------------------------------------------------

def delete_build_request(api_db, uuid):
    """Delete an unscheduled server; False if it already left for a cell."""
    with api_db.session() as session:
        result = session.execute(sa.delete(api_models.BuildRequest).where(
            api_models.BuildRequest.instance_uuid == uuid))
        if not result.rowcount:
            return False
        for model in (api_models.RequestSpec, api_models.InstanceGroupMember):
            session.execute(sa.delete(model).where(
                model.instance_uuid == uuid))
        session.execute(sa.delete(api_models.InstanceMapping).where(
            api_models.InstanceMapping.instance_uuid == uuid,
            api_models.InstanceMapping.cell_id.is_(None)))
        return True


def queue_for_delete(api_db, uuid):
    with api_db.session() as session:
        session.execute(sa.update(api_models.InstanceMapping).where(
            api_models.InstanceMapping.instance_uuid == uuid).values(
                queued_for_delete=True))
        session.execute(sa.delete(api_models.InstanceGroupMember).where(
            api_models.InstanceGroupMember.instance_uuid == uuid))


def mark_deleted(cells, cell, uuid, now):
    """Mark the instance deleted in its cell (compare-and-swap)."""
    with cells.db(cell).session() as session:
        result = session.execute(sa.update(cell_models.Instance).where(
            cell_models.Instance.uuid == uuid,
            cell_models.Instance.vm_state.in_(states.sources_of(
                states.DELETED)),
            cell_models.Instance.deleted.is_(False)).values(
                vm_state=states.DELETED, task_state=None, deleted=True,
                deleted_at=now, terminated_at=now))
        return bool(result.rowcount)


def mark_deleting(cells, cell, uuid):
    """Set task_state deleting; False when already deleted."""
    with cells.db(cell).session() as session:
        result = session.execute(sa.update(cell_models.Instance).where(
            cell_models.Instance.uuid == uuid,
            cell_models.Instance.deleted.is_(False),
            cell_models.Instance.vm_state != states.DELETED).values(
                task_state=states.DELETING))
        return bool(result.rowcount)


def hosts_of(api_db, cells, uuids):
    """The hosts of the given instances (for server group hosts)."""
    if not uuids:
        return []
    with api_db.session() as session:
        rows = session.execute(sa.select(
            api_models.InstanceMapping.instance_uuid,
            api_models.InstanceMapping.cell_id).where(
                api_models.InstanceMapping.instance_uuid.in_(uuids),
                api_models.InstanceMapping.cell_id.is_not(None))).all()
    by_cell = {}
    for uuid, cell_id in rows:
        by_cell.setdefault(cell_id, []).append(uuid)
    hosts = set()
    for cell_id, cell_uuids in by_cell.items():
        cell = cells.by_id(cell_id)
        with cells.db(cell).session() as session:
            hosts.update(h for (h,) in session.execute(sa.select(
                cell_models.Instance.host).where(
                    cell_models.Instance.uuid.in_(cell_uuids),
                    cell_models.Instance.deleted.is_(False))).all() if h)
    return sorted(hosts)
