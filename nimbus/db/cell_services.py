"""The cell database's ``services`` and ``compute_nodes`` tables: the only
module that writes SQL on them. The cell conductor writes them for the
computes (heartbeats, node records); the compute API lists, updates and
deletes services; the scheduler, the dashboard, the build check and the
availability zones read them."""

import sqlalchemy as sa
from oslo_utils import uuidutils

from nimbus.common.db import types
from nimbus.db.cell import models


def service_to_dict(row):
    return {
        'id': row.id,
        'uuid': row.uuid,
        'host': row.host,
        'binary': row.binary,
        'disabled': row.disabled,
        'disabled_reason': row.disabled_reason,
        'forced_down': row.forced_down,
        'last_seen_up': row.last_seen_up.isoformat()
        if row.last_seen_up
        else None,
    }


# The RPC topic a service of each binary serves (recorded with it, as in
# Nova's services table); the hosts' agents' is ``compute``.
TOPICS = {'nimbus-scheduler': 'scheduler', 'nimbus-conductor': 'conductor'}


def topic_of(binary):
    return TOPICS.get(binary, 'compute')


def by_host_binary(session, host, binary):
    """The service row of ``binary`` on ``host``, or None."""
    return session.execute(
        sa.select(models.Service).where(
            models.Service.host == host, models.Service.binary == binary
        )
    ).scalar()


def _new(host, binary, availability_zone, **values):
    """A new record of ``binary`` on ``host`` (its first heartbeat)."""
    return models.Service(
        uuid=uuidutils.generate_uuid(),
        host=host,
        binary=binary,
        topic=topic_of(binary),
        availability_zone=availability_zone,
        **values,
    )


def heartbeat(session, host, binary, availability_zone=None):
    row = by_host_binary(session, host, binary)
    if row is None:
        row = _new(host, binary, availability_zone, report_count=0)
        session.add(row)
    row.last_seen_up = types.utcnow()
    row.report_count = (row.report_count or 0) + 1
    session.flush()
    return service_to_dict(row)


def heartbeats(session, hosts, binary, availability_zone=None):
    """Refresh the records of many hosts of one ``binary`` in the caller's
    transaction: one UPDATE for the hosts that have a record, one INSERT
    each for those that do not (a host's first heartbeat). Returns
    ``{'refreshed': n, 'created': m}``."""
    hosts = list(dict.fromkeys(hosts))
    if not hosts:
        return {'refreshed': 0, 'created': 0}
    now = types.utcnow()
    # The UPDATE first: when it touched every host (each has its record,
    # the usual beat) there is nothing to read or insert.
    updated = session.execute(
        sa.update(models.Service)
        .where(models.Service.binary == binary, models.Service.host.in_(hosts))
        .values(last_seen_up=now, report_count=models.Service.report_count + 1)
        .execution_options(synchronize_session=False)
    ).rowcount
    if updated == len(hosts):
        return {'refreshed': updated, 'created': 0}
    known = set(
        session.execute(
            sa.select(models.Service.host).where(
                models.Service.binary == binary, models.Service.host.in_(hosts)
            )
        ).scalars()
    )
    created = [h for h in hosts if h not in known]
    for host in created:
        session.add(
            _new(
                host,
                binary,
                availability_zone,
                report_count=1,
                last_seen_up=now,
            )
        )
    session.flush()
    return {'refreshed': len(known), 'created': len(created)}


def disable(session, host, binary, reason):
    """Disable the service (as ``PUT /os-services/disable-log-reason``);
    None when it has no record."""
    row = by_host_binary(session, host, binary)
    if row is None:
        return None
    row.disabled = True
    row.disabled_reason = reason[:255]
    row.updated_at = types.utcnow()
    session.flush()
    return service_to_dict(row)


def update_compute_node(session, record):
    """Create or update the node of ``record`` (a ComputeNodeRecord):
    the fields it sets."""
    return update_compute_nodes(session, [record])[0]


def update_compute_nodes(session, records):
    """Create or update the node of each of ``records``
    (ComputeNodeRecords), with one read of the existing rows and one flush
    for them all (the node records of
    many simulated hosts starting together); the answers in order."""
    uuids = [record.uuid for record in records]
    rows = {
        row.uuid: row
        for row in session.execute(
            sa.select(models.ComputeNode).where(
                models.ComputeNode.uuid.in_(uuids)
            )
        ).scalars()
    }
    now = types.utcnow()
    for record in records:
        row = rows.get(record.uuid)
        if row is None:
            row = rows[record.uuid] = models.ComputeNode(
                uuid=record.uuid,
                host=record.host,
                hypervisor_hostname=record.values.get(
                    'hypervisor_hostname', record.host
                ),
            )
            session.add(row)
        for field, value in record.values.items():
            setattr(row, field, value)
        row.updated_at = now
    session.flush()
    return [
        {'uuid': row.uuid, 'host': row.host, 'id': row.id}
        for row in (rows[uuid] for uuid in uuids)
    ]


# -- services, for the compute API, the scheduler and the conductors -----


def listing(session, host=None, binary=None, binaries=None):
    """The service rows, oldest first; only ``host``'s, ``binary``'s or
    those of ``binaries`` when given."""
    query = sa.select(models.Service).order_by(models.Service.id)
    if host is not None:
        query = query.where(models.Service.host == host)
    if binary is not None:
        query = query.where(models.Service.binary == binary)
    if binaries is not None:
        query = query.where(models.Service.binary.in_(list(binaries)))
    return list(session.execute(query).scalars())


STATUS_COLUMNS = (
    'host',
    'binary',
    'disabled',
    'disabled_reason',
    'forced_down',
    'last_seen_up',
    'updated_at',
    'created_at',
)


def statuses(session, binaries):
    """What the scheduler's refresh reads of the services of ``binaries``
    (rows with :data:`STATUS_COLUMNS` as attributes, oldest first): the
    columns only, no ORM objects (at a thousand hosts every 10 s)."""
    return list(
        session.execute(
            sa.select(
                *(getattr(models.Service, name) for name in STATUS_COLUMNS)
            )
            .where(models.Service.binary.in_(list(binaries)))
            .order_by(models.Service.id)
        )
    )


def by_id_or_uuid(session, service_id):
    """The service row of an integer id (or its string) or a uuid, or
    None."""
    if str(service_id).isdigit():
        where = models.Service.id == int(service_id)
    else:
        where = models.Service.uuid == service_id
    return session.execute(sa.select(models.Service).where(where)).scalar()


def update(session, row_id, values):
    """Set ``values`` on the service row ``row_id``; returns the row."""
    row = session.get(models.Service, row_id)
    for key, value in values.items():
        setattr(row, key, value)
    session.flush()
    return row


def delete(session, row_id):
    """Delete a service row; with a compute's, its host's compute nodes.
    Returns ``(host, binary)`` of the service deleted."""
    row = session.get(models.Service, row_id)
    host, binary = row.host, row.binary
    session.delete(row)
    if binary.endswith('compute'):
        session.execute(
            sa.delete(models.ComputeNode).where(
                models.ComputeNode.host == host
            )
        )
    return host, binary


def computes_on(session, host):
    """The compute service rows of ``host`` (any ``*compute`` binary)."""
    return list(
        session.execute(
            sa.select(models.Service).where(
                models.Service.host == host,
                models.Service.binary.like('%compute'),
            )
        ).scalars()
    )


def services_on_hosts(session, binary, hosts):
    """``{host: row}`` of ``binary``'s services on these hosts."""
    return {
        row.host: row
        for row in session.execute(
            sa.select(models.Service).where(
                models.Service.binary == binary,
                models.Service.host.in_(set(hosts)),
            )
        ).scalars()
    }


_SERVICES = models.Service.__table__
# Built once: a boot's zone lookup runs it (Core, on the table).
_REPORTED_ZONES = sa.select(
    _SERVICES.c.host, _SERVICES.c.availability_zone
).where(
    _SERVICES.c.host.in_(sa.bindparam('hosts', expanding=True)),
    _SERVICES.c.binary == sa.bindparam('binary'),
)


def reported_zones(session, hosts, binary):
    """``{host: zone}`` ``binary`` reported on each of ``hosts`` (None
    when it reported none; hosts without the service left out)."""
    return dict(
        session.execute(
            _REPORTED_ZONES, {'hosts': sorted(hosts), 'binary': binary}
        ).all()
    )


def reported_zone(session, host, binary):
    """The availability zone ``binary`` on ``host`` reported, or None."""
    return session.execute(
        sa.select(models.Service.availability_zone).where(
            models.Service.host == host, models.Service.binary == binary
        )
    ).scalar()


# -- compute nodes ---------------------------------------------------------


def nodes(session):
    """Every compute node row, oldest first."""
    return list(
        session.execute(
            sa.select(models.ComputeNode).order_by(models.ComputeNode.id)
        ).scalars()
    )


def node_of(session, host, nodename):
    """The compute node ``nodename`` of ``host`` (a row), or None."""
    return session.execute(
        sa.select(models.ComputeNode).where(
            models.ComputeNode.host == host,
            models.ComputeNode.hypervisor_hostname == nodename,
        )
    ).scalar()


def node_as_dict(row):
    """Every column of a compute node row."""
    return {
        c.name: getattr(row, c.name)
        for c in models.ComputeNode.__table__.columns
    }


def node_hosts(session):
    """The hosts that have a compute node."""
    return set(session.execute(sa.select(models.ComputeNode.host)).scalars())


def node_mark(session):
    """``(count, highest id)`` of the compute nodes."""
    return session.execute(
        sa.select(
            sa.func.count(models.ComputeNode.id),
            sa.func.max(models.ComputeNode.id),
        )
    ).one()


def node_capacities(session):
    """``(host, hypervisor_hostname, uuid, vcpus, memory_mb, local_gb,
    cpu/ram/disk_allocation_ratio)`` of every node, by host (only those
    columns: a node's JSON facts are not decoded)."""
    node = models.ComputeNode
    return session.execute(
        sa.select(
            node.host,
            node.hypervisor_hostname,
            node.uuid,
            node.vcpus,
            node.memory_mb,
            node.local_gb,
            node.cpu_allocation_ratio,
            node.ram_allocation_ratio,
            node.disk_allocation_ratio,
        ).order_by(node.host)
    ).all()
