"""What the audit read: each source's records, and how it reads them.

It reads placement first, then the ARQs, then the API database, then the
cells: the order in which a build writes them. A build under way between
the reads then looks complete, not orphaned.
"""

import collections
import dataclasses
import datetime


from nimbus.common import instance_states as states
from nimbus.conductor.audit.kinds import AuditError
from nimbus.db import build_requests as build_request_rows
from nimbus.db import instance_mappings
from nimbus.db.cell_instances import queries as instance_queries


@dataclasses.dataclass
class InstanceRecord:
    uuid: str
    cell: object  # nimbus.db.cells.Cell
    vm_state: str
    task_state: str
    deleted: bool
    created_at: datetime.datetime
    updated_at: datetime.datetime
    deleted_at: datetime.datetime
    host: str = None

    @property
    def live(self):
        return not self.deleted and self.vm_state != states.DELETED

    @property
    def changed_at(self):
        return self.updated_at or self.created_at


@dataclasses.dataclass
class Snapshot:
    """What each source held when the audit read it."""

    consumers: dict  # consumer uuid -> {rp uuid: resources}
    arqs: list  # ARQ dicts, or None without an accelerator API
    build_requests: dict  # instance uuid -> created_at
    mappings: dict  # instance uuid -> (cell id or None, created_at)
    instances: dict  # instance uuid -> [InstanceRecord]
    cells: list
    # instance uuid -> (created_at, schedule_started_at) of each build
    # request: when it was last leased for scheduling, if ever
    leases: dict = dataclasses.field(default_factory=dict)

    def records(self, uuid):
        return self.instances.get(uuid, [])

    def live_record(self, uuid):
        for record in self.records(uuid):
            if record.live:
                return record
        return None


class Reader:
    """Reading every source; mixed into :class:`~nimbus.conductor.audit.
    Auditor` (its ``api_db``, ``cells``, ``placement`` and
    ``accelerator``)."""

    # -- reading -------------------------------------------------------

    def _get(self, ctxt, path):
        response = self.placement.request(ctxt, 'GET', path)
        if response.status_code != 200:
            raise AuditError(
                'placement answered %d to GET %s'
                % (response.status_code, path)
            )
        return response.json()

    def _consumers(self, ctxt):
        consumers = collections.defaultdict(dict)
        providers = self._get(ctxt, '/resource_providers')
        for provider in providers['resource_providers']:
            allocations = self._get(
                ctxt, '/resource_providers/%s/allocations' % provider['uuid']
            )['allocations']
            for consumer, allocation in allocations.items():
                consumers[consumer][provider['uuid']] = allocation['resources']
        return dict(consumers)

    def _arqs(self, ctxt):
        if self.accelerator is None:
            return None
        try:
            return self.accelerator.list_arqs(ctxt)
        except Exception as exc:
            raise AuditError(
                'accelerator requests could not be read: %s' % exc
            )

    def _api_records(self):
        with self.api_db.session() as session:
            rows = build_request_rows.lease_times(session)
            build_requests = {r.instance_uuid: r.created_at for r in rows}
            leases = {
                r.instance_uuid: (r.created_at, r.schedule_started_at)
                for r in rows
            }
            mappings = {
                uuid: (cell_id, created)
                for uuid, cell_id, created in instance_mappings.every(session)
            }
        return build_requests, mappings, leases

    def _cell_records(self, cells):
        instances = collections.defaultdict(list)
        for cell in cells:
            try:
                with self.cells.db(cell).session() as session:
                    rows = instance_queries.audit_rows(session)
            except Exception as exc:
                raise AuditError(
                    'the database of %s could not be read: %s'
                    % (cell.name, exc)
                )
            for row in rows:
                instances[row.uuid].append(
                    InstanceRecord(
                        row.uuid,
                        cell,
                        row.vm_state,
                        row.task_state,
                        bool(row.deleted),
                        row.created_at,
                        row.updated_at,
                        row.deleted_at,
                        row.host,
                    )
                )
        return dict(instances)

    def gather(self, ctxt):
        """Read every source (see the module's note on the order)."""
        try:
            consumers = self._consumers(ctxt)
        except AuditError:
            raise
        except Exception as exc:
            raise AuditError('placement could not be read: %s' % exc)
        arqs = self._arqs(ctxt)
        try:
            build_requests, mappings, leases = self._api_records()
            cells = self.cells.refresh()
        except Exception as exc:
            raise AuditError('the API database could not be read: %s' % exc)
        return Snapshot(
            consumers,
            arqs,
            build_requests,
            mappings,
            self._cell_records(cells),
            cells,
            leases,
        )
