"""What the dashboard's host panels show, read in bulk and cached.

Per host: capacity per resource class (VCPU, MEMORY_MB, DISK_GB) as
``total * allocation_ratio`` from the compute node record (the ratios are
the ones placement holds, written back by the resource tracker), usage as
the sum of the flavors of the servers on the host, the number of servers,
its cell and its aggregates. That is two queries per cell and one on the API
database, whatever the number of hosts: placement's API has no bulk usage
call (``GET /resource_providers/{uuid}/usages`` is one request per provider,
1000 at 1000 hosts; ``benchmarks/dashboard.py`` measures both).

:class:`SnapshotCache` keeps the last answer for ``ttl`` seconds so that
many open pages cost one read per interval.
"""

import threading
import time


from nimbus.api.objects import aggregates as aggregate_obj
from nimbus.db import scheduling_records
from nimbus.db import cell_services
from nimbus.db.cell_instances import queries as instance_queries

RESOURCE_CLASSES = ('VCPU', 'MEMORY_MB', 'DISK_GB')
FAILED_LIMIT = 50


def _flavor_amounts(flavor):
    flavor = flavor or {}
    return {
        'VCPU': int(flavor.get('vcpus') or 0),
        'MEMORY_MB': int(flavor.get('memory_mb') or 0),
        'DISK_GB': int(flavor.get('root_gb') or 0)
        + int(flavor.get('ephemeral_gb') or 0),
    }


def _node_capacity(node):
    return {
        'VCPU': int(node.vcpus * node.cpu_allocation_ratio),
        'MEMORY_MB': int(node.memory_mb * node.ram_allocation_ratio),
        'DISK_GB': int(node.local_gb * node.disk_allocation_ratio),
    }


def _cell_hosts(cells, cell):
    """The hosts of one cell: one query for nodes, one for servers (only
    the columns shown: a node's JSON facts are not decoded)."""
    hosts = {}
    with cells.db(cell).session() as session:
        for node in cell_services.node_capacities(session):
            capacity = _node_capacity(node)
            hosts[(node.host, node.hypervisor_hostname)] = {
                'host': node.host,
                'node': node.hypervisor_hostname,
                'uuid': node.uuid,
                'cell': cell.name,
                'cell_uuid': cell.uuid,
                'servers': 0,
                'resources': {
                    rc: {'used': 0, 'capacity': capacity[rc]}
                    for rc in RESOURCE_CLASSES
                },
            }
        for host, node, flavor in instance_queries.placed_usage(session):
            entry = hosts.get((host, node))
            if entry is None:
                continue
            entry['servers'] += 1
            for rc, amount in _flavor_amounts(flavor).items():
                entry['resources'][rc]['used'] += amount
    return list(hosts.values())


def hosts(api_db, cells):
    """``{'hosts': [...], 'cells': [...], 'aggregates': [...],
    'totals': {rc: {used, capacity}}}``."""
    aggregates = aggregate_obj.list_all(api_db)
    member_of = {}
    for agg in aggregates:
        for host in agg['hosts']:
            member_of.setdefault(host, []).append(agg['name'])
    result = []
    cell_list = []
    for cell in cells.cells(include_cell0=False):
        cell_list.append({'uuid': cell.uuid, 'name': cell.name})
        result.extend(_cell_hosts(cells, cell))
    totals = {rc: {'used': 0, 'capacity': 0} for rc in RESOURCE_CLASSES}
    for entry in result:
        entry['aggregates'] = sorted(member_of.get(entry['host'], ()))
        for rc in RESOURCE_CLASSES:
            for key in ('used', 'capacity'):
                totals[rc][key] += entry['resources'][rc][key]
    return {
        'hosts': result,
        'cells': cell_list,
        'aggregates': [
            {
                'name': a['name'],
                'availability_zone': a['availability_zone'],
                'hosts': len(a['hosts']),
            }
            for a in aggregates
        ],
        'resource_classes': list(RESOURCE_CLASSES),
        'totals': totals,
        'servers': sum(e['servers'] for e in result),
    }


def _iso(value):
    return value.replace(microsecond=0).isoformat() + 'Z' if value else None


def failed_builds(api_db, cells, limit=FAILED_LIMIT):
    """The newest failed builds (cell0, and ERROR servers of every cell),
    each with its fault and its scheduling attempts (the scheduling
    records)."""
    failed = []
    for cell in cells.cells(include_cell0=True):
        with cells.db(cell).session() as session:
            rows = instance_queries.newest_failed(
                session, limit, any_state=cell.is_cell0
            )
            uuids = [r.uuid for r in rows]
            faults = {}
            if uuids:
                for fault in instance_queries.faults(session, uuids):
                    faults[fault.instance_uuid] = {
                        'code': fault.code,
                        'message': fault.message,
                        'host': fault.host,
                        'created': _iso(fault.created_at),
                    }
            for row in rows:
                failed.append(
                    {
                        'uuid': row.uuid,
                        'name': row.display_name,
                        'cell': cell.name,
                        'host': row.host,
                        'vm_state': row.vm_state,
                        'flavor': (row.flavor or {}).get('name'),
                        'created': _iso(row.created_at),
                        'fault': faults.get(row.uuid),
                        'attempts': [],
                    }
                )
    failed.sort(key=lambda f: f['created'] or '', reverse=True)
    failed = failed[:limit]
    by_uuid = {f['uuid']: f for f in failed}
    if by_uuid:
        with api_db.session() as session:
            for rec in scheduling_records.of_instances(session, list(by_uuid)):
                by_uuid[rec.instance_uuid]['attempts'].append(
                    {
                        'outcome': rec.outcome,
                        'detail': rec.detail,
                        'created': _iso(rec.created_at),
                    }
                )
    return {'failed_builds': failed}


class SnapshotCache:
    """``get(name, build)``: the value ``build()`` returned less than ``ttl``
    seconds ago, else a fresh one. One build at a time per name: callers
    arriving meanwhile wait for it instead of reading the databases too."""

    def __init__(self, ttl=2.0, clock=time.monotonic):
        self.ttl = ttl
        self.clock = clock
        self._entries = {}
        self._locks = {}
        self._guard = threading.Lock()

    def get(self, name, build):
        with self._guard:
            lock = self._locks.setdefault(name, threading.Lock())
        with lock:
            entry = self._entries.get(name)
            now = self.clock()
            if entry is not None and now - entry[0] < self.ttl:
                return entry[1]
            value = build()
            self._entries[name] = (self.clock(), value)
            return value
