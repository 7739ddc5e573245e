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
import sqlalchemy as sa

from nimbus.common import instance_states as states
from nimbus.common.objects import BuildRequest
from nimbus.db import build_requests
from nimbus.db import cell_instances
from nimbus.db import request_specs
from nimbus.db.api import models as api_models
from nimbus.db.cell import models as cell_models

LOG = logging.getLogger(__name__)


class CellUnreachable(Exception):
    """A cell database did not answer."""


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


def faults_of(session, uuids):
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
    with api_db.session() as session:
        for instance in instances:
            build_requests.add(session, BuildRequest.from_primitive(instance))
            request_specs.add(session, instance['uuid'], request_spec)
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
        build_requests.delete(session, uuids)
        request_specs.delete(session, uuids)
        for model in (
            api_models.InstanceMapping,
            api_models.InstanceGroupMember,
        ):
            session.execute(
                sa.delete(model).where(model.instance_uuid.in_(uuids))
            )


# -- find --------------------------------------------------------------------


def mapping_of(api_db, uuid):
    with api_db.session() as session:
        return session.execute(
            sa.select(api_models.InstanceMapping).where(
                api_models.InstanceMapping.instance_uuid == uuid
            )
        ).scalar()


def build_request_of(api_db, uuid):
    with api_db.session() as session:
        row = build_requests.get(session, uuid)
        return None if row is None else row.instance


def instance_of(cells, cell, uuid):
    with cells.db(cell).session() as session:
        row = session.execute(
            sa.select(cell_models.Instance).where(
                cell_models.Instance.uuid == uuid
            )
        ).scalar()
        if row is None:
            return None
        return from_instance(row, cell, faults_of(session, [uuid]).get(uuid))


def get(api_db, cells, uuid):
    """The server record, or :class:`ServerNotFound`.

    Retries once when the build request disappears between reading the
    mapping and reading it (the conductor just moved it to a cell).
    """
    for _attempt in range(2):
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
            record = instance_of(cells, cell, uuid)
        except Exception as exc:
            LOG.warning('Cell %s is unreachable: %s', cell.name, exc)
            raise CellUnreachable(cell.name)
        if record is None or record['deleted']:
            raise ServerNotFound(uuid)
        return record
    raise ServerNotFound(uuid)


# -- delete ------------------------------------------------------------------


def delete_build_request(api_db, uuid):
    """Delete an unscheduled server; False if it already left for a cell."""
    with api_db.session() as session:
        if not build_requests.delete(session, [uuid]):
            return False
        request_specs.delete(session, [uuid])
        session.execute(
            sa.delete(api_models.InstanceGroupMember).where(
                api_models.InstanceGroupMember.instance_uuid == uuid
            )
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
