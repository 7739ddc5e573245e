"""Service and compute node records of a cell (written for the computes)."""

import sqlalchemy as sa
from oslo_utils import uuidutils

from nimbus.common.db import types
from nimbus.db.cell import models

_NODE_FIELDS = (
    'hypervisor_hostname',
    'hypervisor_type',
    'hypervisor_version',
    'cpu_info',
    'host_ip',
    'vcpus',
    'memory_mb',
    'local_gb',
    'vcpus_used',
    'memory_mb_used',
    'local_gb_used',
    'running_vms',
    'current_workload',
    'cpu_allocation_ratio',
    'ram_allocation_ratio',
    'disk_allocation_ratio',
    'supported_instances',
    'numa_topology',
    'pci_stats',
    'metrics',
    'stats',
    'failed_builds',
)


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


def heartbeat(session, host, binary, availability_zone=None):
    row = session.execute(
        sa.select(models.Service).where(
            models.Service.host == host, models.Service.binary == binary
        )
    ).scalar()
    if row is None:
        row = models.Service(
            uuid=uuidutils.generate_uuid(),
            host=host,
            binary=binary,
            topic='compute',
            availability_zone=availability_zone,
            report_count=0,
        )
        session.add(row)
    row.last_seen_up = types.utcnow()
    row.report_count = (row.report_count or 0) + 1
    session.flush()
    return service_to_dict(row)


def disable(session, host, binary, reason):
    """Disable the service (as ``PUT /os-services/disable-log-reason``);
    None when it has no record."""
    row = session.execute(
        sa.select(models.Service).where(
            models.Service.host == host, models.Service.binary == binary
        )
    ).scalar()
    if row is None:
        return None
    row.disabled = True
    row.disabled_reason = reason[:255]
    row.updated_at = types.utcnow()
    session.flush()
    return service_to_dict(row)


def update_compute_node(session, node):
    row = session.execute(
        sa.select(models.ComputeNode).where(
            models.ComputeNode.uuid == node['uuid']
        )
    ).scalar()
    if row is None:
        row = models.ComputeNode(
            uuid=node['uuid'],
            host=node['host'],
            hypervisor_hostname=node.get('hypervisor_hostname', node['host']),
        )
        session.add(row)
    for field in _NODE_FIELDS:
        if field in node:
            setattr(row, field, node[field])
    row.updated_at = types.utcnow()
    session.flush()
    return {'uuid': row.uuid, 'host': row.host, 'id': row.id}
