"""Services and compute nodes, read from every cell database."""

import datetime

import sqlalchemy as sa

from nimbus.db.api import models as api_models
from nimbus.db.cell import models as cell_models


class ServiceNotFound(Exception):
    pass


# The compute API names services as Nova does (the wire contract clients
# written for Nova, Tempest and the openstack CLI among them, check and
# filter by); the services record themselves under Nimbus's names, which
# Nimbus's own CLI shows. Either name finds a service.
NOVA_NAMES = {
    'nimbus-compute': 'nova-compute',
    'nimbus-scheduler': 'nova-scheduler',
    'nimbus-conductor': 'nova-conductor',
}
STORED_NAMES = {nova: nimbus for nimbus, nova in NOVA_NAMES.items()}


def shown_binary(binary):
    """The name the API shows for a stored binary."""
    return NOVA_NAMES.get(binary, binary)


def stored_binary(name):
    """The stored binary a filter or body names (Nova's or Nimbus's)."""
    return STORED_NAMES.get(name, name)


def is_up(row, down_time, now):
    if row.forced_down:
        return False
    last = row.last_seen_up or row.updated_at or row.created_at
    if last is None:
        return False
    return (now - last) <= datetime.timedelta(seconds=down_time)


def service_dict(row, cell, down_time, now):
    return {
        'id': row.id,
        'uuid': row.uuid,
        'host': row.host,
        'binary': row.binary,
        'topic': row.topic,
        'disabled': row.disabled,
        'disabled_reason': row.disabled_reason,
        'forced_down': row.forced_down,
        'up': is_up(row, down_time, now),
        'updated_at': row.last_seen_up or row.updated_at or row.created_at,
        'availability_zone': row.availability_zone,
        'cell': cell,
    }


def list_services(cells, down_time, now, host=None, binary=None):
    result = []
    for cell in cells.cells():
        with cells.db(cell).session() as session:
            query = sa.select(cell_models.Service).order_by(
                cell_models.Service.id
            )
            if host is not None:
                query = query.where(cell_models.Service.host == host)
            if binary is not None:
                query = query.where(cell_models.Service.binary == binary)
            for row in session.execute(query).scalars():
                result.append(service_dict(row, cell, down_time, now))
    return result


def _find(cells, service_id):
    """``(cell, row id)`` of a service by uuid or integer id."""
    for cell in cells.cells():
        with cells.db(cell).session() as session:
            column = (
                cell_models.Service.id
                if str(service_id).isdigit()
                else cell_models.Service.uuid
            )
            value = (
                int(service_id) if str(service_id).isdigit() else service_id
            )
            row = session.execute(
                sa.select(cell_models.Service).where(column == value)
            ).scalar()
            if row is not None:
                return cell, row.id
    raise ServiceNotFound(service_id)


def find_by_host_binary(cells, host, binary):
    for cell in cells.cells():
        with cells.db(cell).session() as session:
            row = session.execute(
                sa.select(cell_models.Service).where(
                    cell_models.Service.host == host,
                    cell_models.Service.binary == binary,
                )
            ).scalar()
            if row is not None:
                return cell, row.id
    raise ServiceNotFound('%s/%s' % (host, binary))


def update(cells, service_id, values, down_time, now, cell=None):
    if cell is None:
        cell, row_id = _find(cells, service_id)
    else:
        row_id = service_id
    with cells.db(cell).session() as session:
        row = session.get(cell_models.Service, row_id)
        for key, value in values.items():
            setattr(row, key, value)
        session.flush()
        return service_dict(row, cell, down_time, now)


def delete(api_db, cells, service_id):
    """Delete a service; a compute's nodes and host mapping go with it."""
    cell, row_id = _find(cells, service_id)
    with cells.db(cell).session() as session:
        row = session.get(cell_models.Service, row_id)
        host, binary = row.host, row.binary
        session.delete(row)
        if binary.endswith('compute'):
            session.execute(
                sa.delete(cell_models.ComputeNode).where(
                    cell_models.ComputeNode.host == host
                )
            )
    if binary.endswith('compute'):
        with api_db.session() as session:
            session.execute(
                sa.delete(api_models.HostMapping).where(
                    api_models.HostMapping.host == host
                )
            )
            session.execute(
                sa.delete(api_models.AggregateHost).where(
                    api_models.AggregateHost.host == host
                )
            )


def compute_is_up(cells, cell, host, down_time, now):
    """True when ``host``'s compute service in ``cell`` is up: it exists,
    is not forced down and heartbeated within ``down_time`` seconds."""
    with cells.db(cell).session() as session:
        rows = (
            session.execute(
                sa.select(cell_models.Service).where(
                    cell_models.Service.host == host,
                    cell_models.Service.binary.like('%compute'),
                )
            )
            .scalars()
            .all()
        )
        return any(is_up(row, down_time, now) for row in rows)


def compute_services_by_host(cells, down_time, now):
    return {
        s['host']: s
        for s in list_services(cells, down_time, now)
        if s['binary'].endswith('compute')
    }


def list_nodes(cells):
    """``[(cell, node dict)]`` for every compute node of every cell."""
    result = []
    for cell in cells.cells():
        with cells.db(cell).session() as session:
            for row in session.execute(
                sa.select(cell_models.ComputeNode).order_by(
                    cell_models.ComputeNode.id
                )
            ).scalars():
                node = {
                    c.name: getattr(row, c.name)
                    for c in cell_models.ComputeNode.__table__.columns
                }
                node['cell'] = cell
                result.append(node)
    return result


def instances_on_node(cells, cell, host, node):
    with cells.db(cell).session() as session:
        return [
            {'uuid': u, 'name': n}
            for u, n in session.execute(
                sa.select(
                    cell_models.Instance.uuid,
                    cell_models.Instance.display_name,
                ).where(
                    cell_models.Instance.host == host,
                    cell_models.Instance.node == node,
                    cell_models.Instance.deleted.is_(False),
                )
            ).all()
        ]


def known_host(api_db, cells, host):
    """True when ``host`` is a mapped host or runs a compute service."""
    with api_db.session() as session:
        if session.execute(
            sa.select(api_models.HostMapping.id).where(
                api_models.HostMapping.host == host
            )
        ).first():
            return True
    for cell in cells.cells():
        with cells.db(cell).session() as session:
            if session.execute(
                sa.select(cell_models.Service.id).where(
                    cell_models.Service.host == host,
                    cell_models.Service.binary.like('%compute'),
                )
            ).first():
                return True
    return False
