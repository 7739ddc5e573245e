"""Services and compute nodes, read from every cell database."""

import datetime


from nimbus.db import aggregates as aggregate_rows
from nimbus.db import cell_mappings
from nimbus.db import cell_services
from nimbus.db.cell_instances import queries as instance_queries


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
            for row in cell_services.listing(session, host, binary):
                result.append(service_dict(row, cell, down_time, now))
    return result


def _find(cells, service_id):
    """``(cell, row id)`` of a service by uuid or integer id."""
    for cell in cells.cells():
        with cells.db(cell).session() as session:
            row = cell_services.by_id_or_uuid(session, service_id)
            if row is not None:
                return cell, row.id
    raise ServiceNotFound(service_id)


def find_by_host_binary(cells, host, binary):
    for cell in cells.cells():
        with cells.db(cell).session() as session:
            row = cell_services.by_host_binary(session, host, binary)
            if row is not None:
                return cell, row.id
    raise ServiceNotFound('%s/%s' % (host, binary))


def update(cells, service_id, values, down_time, now, cell=None):
    if cell is None:
        cell, row_id = _find(cells, service_id)
    else:
        row_id = service_id
    with cells.db(cell).session() as session:
        row = cell_services.update(session, row_id, values)
        return service_dict(row, cell, down_time, now)


def delete(api_db, cells, service_id):
    """Delete a service; a compute's nodes and host mapping go with it."""
    cell, row_id = _find(cells, service_id)
    with cells.db(cell).session() as session:
        host, binary = cell_services.delete(session, row_id)
    if binary.endswith('compute'):
        with api_db.session() as session:
            cell_mappings.unmap_host(session, host)
            aggregate_rows.remove_host_everywhere(session, host)


def compute_is_up(cells, cell, host, down_time, now):
    """True when ``host``'s compute service in ``cell`` is up: it exists,
    is not forced down and heartbeated within ``down_time`` seconds."""
    with cells.db(cell).session() as session:
        rows = cell_services.computes_on(session, host)
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
            for row in cell_services.nodes(session):
                node = cell_services.node_as_dict(row)
                node['cell'] = cell
                result.append(node)
    return result


def instances_on_node(cells, cell, host, node):
    with cells.db(cell).session() as session:
        return [
            {'uuid': u, 'name': n}
            for u, n in instance_queries.names_on_node(session, host, node)
        ]


def known_host(api_db, cells, host):
    """True when ``host`` is a mapped host or runs a compute service."""
    with api_db.session() as session:
        if cell_mappings.host_is_mapped(session, host):
            return True
    for cell in cells.cells():
        with cells.db(cell).session() as session:
            if cell_services.computes_on(session, host):
                return True
    return False
