"""HostInfoSource backed by the API database (aggregates, server groups, images) and
every cell database (compute nodes, services, instances). The scheduler is an API-level
service, so it may read the API database; each instance's image properties come from
the API database's images table by the instance's ``image_ref``."""

from __future__ import annotations

import datetime

from oslo_log import log as logging

from nimbus.common import service as common_service
from nimbus.db import aggregates as aggregate_rows
from nimbus.db import images as image_rows
from nimbus.db import scheduling_records
from nimbus.db import server_groups
from nimbus.db import cell_services
from nimbus.db.cell_instances import queries as instance_queries

LOG = logging.getLogger(__name__)

COMPUTE_BINARIES = ('nimbus-compute', 'compute')


def _seen(service):
    return service.last_seen_up or service.updated_at or service.created_at


def _now():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


class DBHostInfoSource:
    """``api_db`` has ``session()``; ``cells`` is a CellDirectory (``cells()``,
    ``db(cell)``). ``service_down_time`` seconds without a heartbeat mark a service down."""

    def __init__(self, api_db, cells, service_down_time: int = 60):
        self.api_db = api_db
        self.cells = cells
        self.service_down_time = service_down_time

    def _cell_sessions(self):
        for cell in self.cells.cells(include_cell0=False):
            try:
                yield cell, self.cells.db(cell).session()
            except Exception:
                LOG.exception(
                    'cell %s is unreachable; its hosts are skipped', cell.uuid
                )

    def compute_nodes(self) -> list[dict]:
        out = []
        for cell, session in self._cell_sessions():
            with session as s:
                for cn in cell_services.nodes(s):
                    out.append(
                        {
                            'uuid': cn.uuid,
                            'host': cn.host,
                            'hypervisor_hostname': cn.hypervisor_hostname,
                            'cell_uuid': cell.uuid,
                            'vcpus': cn.vcpus,
                            'vcpus_used': cn.vcpus_used,
                            'memory_mb': cn.memory_mb,
                            'memory_mb_used': cn.memory_mb_used,
                            'local_gb': cn.local_gb,
                            'local_gb_used': cn.local_gb_used,
                            'cpu_allocation_ratio': cn.cpu_allocation_ratio,
                            'ram_allocation_ratio': cn.ram_allocation_ratio,
                            'disk_allocation_ratio': cn.disk_allocation_ratio,
                            'hypervisor_type': cn.hypervisor_type,
                            'hypervisor_version': cn.hypervisor_version,
                            'cpu_info': cn.cpu_info,
                            'host_ip': cn.host_ip,
                            'supported_instances': cn.supported_instances,
                            'numa_topology': cn.numa_topology,
                            'pci_stats': cn.pci_stats,
                            'metrics': cn.metrics,
                            'num_io_ops': cn.current_workload or 0,
                            'stats': cn.stats or {},
                            'failed_builds': cn.failed_builds,
                            'updated_at': cn.updated_at.isoformat()
                            if cn.updated_at
                            else None,
                        }
                    )
        return out

    def _heartbeat_clock(self, cell, rows, now):
        """The time a cell's compute heartbeats are judged against: now,
        unless the cell's conductors record a heartbeat of their own and
        every one of them is stale. Then nobody has been writing heartbeats
        (the cell conductor, or the cell's bus, is down) and a compute's
        silence says nothing about the compute: its heartbeat is judged
        against the newest one the cell holds."""
        conductors = [
            r for r in rows if r.binary == common_service.CONDUCTOR_BINARY
        ]
        if not conductors or any(
            self._fresh(_seen(r), now) for r in conductors
        ):
            return now
        newest = max(
            (_seen(r) for r in rows if r.binary in COMPUTE_BINARIES),
            default=None,
            key=lambda t: t or datetime.datetime.min,
        )
        LOG.warning(
            'cell %s: no heartbeat recorded for over %s s (its conductor '
            'is down?); its computes are judged by their last heartbeats '
            'relative to each other',
            cell.uuid,
            self.service_down_time,
        )
        return newest or now

    def _fresh(self, seen, clock):
        return (
            seen is None
            or (clock - seen).total_seconds() <= self.service_down_time
        )

    def services(self) -> list[dict]:
        out = []
        now = _now()
        for cell, session in self._cell_sessions():
            with session as s:
                rows = cell_services.statuses(
                    s, COMPUTE_BINARIES + (common_service.CONDUCTOR_BINARY,)
                )
                clock = self._heartbeat_clock(cell, rows, now)
                for svc in rows:
                    if svc.binary not in COMPUTE_BINARIES:
                        continue
                    up = self._fresh(_seen(svc), clock)
                    out.append(
                        {
                            'host': svc.host,
                            'binary': svc.binary,
                            'disabled': svc.disabled,
                            'disabled_reason': svc.disabled_reason,
                            'forced_down': svc.forced_down,
                            'up': up,
                        }
                    )
        return out

    def aggregates(self) -> list[dict]:
        with self.api_db.session() as s:
            return [
                {
                    'id': a.id,
                    'uuid': a.uuid,
                    'name': a.name,
                    'hosts': [h.host for h in a.hosts],
                    'metadata': {m.key: m.value for m in a.metadata_items},
                }
                for a in aggregate_rows.listing(s)
            ]

    def images(self) -> dict[str, dict]:
        """Image id -> properties, from the API database's images table (the cell
        databases keep only each instance's ``image_ref``)."""
        with self.api_db.session() as s:
            return image_rows.properties_by_id(s)

    def image_properties(self, image_ref) -> dict | None:
        """The properties of one image, None when the API database does not know it."""
        if not image_ref:
            return None
        with self.api_db.session() as s:
            return image_rows.properties_of(s, image_ref)

    def instances_by_host(self) -> dict[str, list[dict]]:
        groups = {}
        with self.api_db.session() as s:
            for g in server_groups.listing(s):
                for m in g.members:
                    groups[m.instance_uuid] = g.uuid
        images = self.images()
        empty: dict = {}
        out: dict[str, list[dict]] = {}
        for _cell, session in self._cell_sessions():
            with session as s:
                for inst in instance_queries.placed(s):
                    flavor = inst.flavor or {}
                    # One properties dict per image, shared by its instances.
                    out.setdefault(inst.host, []).append(
                        {
                            'uuid': inst.uuid,
                            'flavor_id': flavor.get('flavorid'),
                            'group_uuid': groups.get(inst.uuid),
                            'image_ref': inst.image_ref,
                            'image_properties': images.get(
                                inst.image_ref, empty
                            ),
                        }
                    )
        return out

    def server_groups(self) -> list[dict]:
        with self.api_db.session() as s:
            return [
                {
                    'uuid': g.uuid,
                    'name': g.name,
                    'policy': g.policy,
                    'rules': g.rules or {},
                    'members': [m.instance_uuid for m in g.members],
                }
                for g in server_groups.listing(s)
            ]


def db_recorder(api_db):
    """A ``record(ctxt, outcome, spec, detail)`` that writes SchedulingRecord
    rows: one Core INSERT in its own transaction (no ORM session)."""

    def record(ctxt, outcome, spec, detail):
        request_id = (
            spec.request_id or getattr(ctxt, 'request_id', None) or 'unknown'
        )
        with api_db.engine.begin() as conn:
            scheduling_records.insert(
                conn, request_id, spec.instance_uuids, outcome, detail
            )

    return record
