"""What the audit read: each source's records, and how it reads them.

It reads placement first, then the ARQs, then the API database, then the
cells: the order in which a build writes them. A build under way between
the reads then looks complete, not orphaned.
"""

import collections
import dataclasses
import datetime

from oslo_log import log as logging

from nimbus.common import instance_states as states
from nimbus.conductor.audit import checks
from nimbus.conductor.audit.kinds import AuditError
from nimbus.db import build_requests as build_request_rows
from nimbus.common.objects import migration as migration_obj
from nimbus.db import cell_migrations
from nimbus.db import instance_mappings
from nimbus.db.cell_instances import queries as instance_queries

LOG = logging.getLogger(__name__)

# Nimbus placement's listing of every consumer's allocations (one request;
# Placement 1.39 has no such route).
BULK_ALLOCATIONS = '/nimbus/allocations'


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
    # The root provider of its host in placement (compute_node_uuid).
    node_uuid: str = None

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
    # Migrations in a final status that still hold allocations: migration
    # uuid -> (its row dict, {rp uuid: resources}, cell name).
    ended: dict = dataclasses.field(default_factory=dict)
    # rp uuid -> its root provider's uuid, read only when an instance holds
    # allocations beside its compute node (else empty).
    roots: dict = dataclasses.field(default_factory=dict)
    # Instance uuids whose live migration still waits for the super
    # conductor (status accepted): the only live migrations a stuck_move
    # can be (once queued, the source compute owns it).
    live_waiting: set = dataclasses.field(default_factory=set)

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
        """``{consumer: {rp uuid: resources}}`` of every allocation: one
        request to Nimbus placement's ``GET /nimbus/allocations``, or, from
        a Placement without that route (404), one per provider."""
        response = self.placement.request(ctxt, 'GET', BULK_ALLOCATIONS)
        if response.status_code == 200:
            return {
                consumer: {
                    rp: entry['resources']
                    for rp, entry in body['allocations'].items()
                }
                for consumer, body in response.json()['consumers'].items()
            }
        if response.status_code != 404:
            raise AuditError(
                'placement answered %d to GET %s'
                % (response.status_code, BULK_ALLOCATIONS)
            )
        LOG.info(
            'audit: placement has no GET %s (not Nimbus placement); '
            'reading the allocations provider by provider',
            BULK_ALLOCATIONS,
        )
        return self._consumers_by_provider(ctxt)

    def _consumers_by_provider(self, ctxt):
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
            ) from exc

    def _api_records(self, named):
        """``(build requests, leases, mappings)``: every build request, the
        mappings to no cell, and those of ``named`` and of the build
        requests."""
        with self.api_db.session() as session:
            rows = build_request_rows.lease_times(session)
            build_requests = {r.instance_uuid: r.created_at for r in rows}
            leases = {
                r.instance_uuid: (r.created_at, r.schedule_started_at)
                for r in rows
            }
            mappings = _by_uuid(instance_mappings.unmapped(session))
            mappings.update(
                _by_uuid(
                    instance_mappings.of(
                        session,
                        (set(named) | set(build_requests)) - set(mappings),
                    )
                )
            )
        return build_requests, leases, mappings

    def _roots(self, ctxt):
        """``{rp uuid: root rp uuid}`` of every provider."""
        providers = self._get(ctxt, '/resource_providers')
        return {
            p['uuid']: p.get('root_provider_uuid') or p['uuid']
            for p in providers['resource_providers']
        }

    def _migration_consumers(self, cells, consumers):
        """``(holding, ended)``: the consumers that are migrations holding
        a move's source allocation, in any cell; and ``{uuid: (row, cell
        name)}`` of those that are migrations in a final status."""
        found = set()
        ended = {}
        self._live_waiting = set()
        for cell in cells:
            try:
                with self.cells.db(cell).session() as session:
                    found |= cell_migrations.holding(session, consumers)
                    for uuid, row in cell_migrations.ended(
                        session, consumers
                    ).items():
                        ended[uuid] = (row, cell.name)
                    self._live_waiting.update(
                        row['instance_uuid']
                        for row in cell_migrations.with_status(
                            session,
                            ['accepted'],
                            [migration_obj.LIVE_MIGRATION],
                        )
                    )
            except Exception as exc:
                raise AuditError(
                    'the database of %s could not be read: %s'
                    % (cell.name, exc)
                ) from exc
        return found, ended

    def _cell_records(self, cells, named):
        """``{uuid: [InstanceRecord]}``: the instances not deleted in every
        cell, and every row of ``named``."""
        instances = collections.defaultdict(list)
        for cell in cells:
            try:
                with self.cells.db(cell).session() as session:
                    rows = instance_queries.audit_rows(session, also=named)
            except Exception as exc:
                raise AuditError(
                    'the database of %s could not be read: %s'
                    % (cell.name, exc)
                ) from exc
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
                        row.compute_node_uuid,
                    )
                )
        return dict(instances)

    def gather(self, ctxt):
        """Read every source (see the module's note on the order).

        What is read is bounded by the cloud as it is now, not by its
        history: the instances not deleted, build requests, mappings to no
        cell, and every record of each uuid placement, a build request or
        an ARQ names. The mappings of instances deleted long ago are
        walked apart, a page at a time, by :meth:`historic_mappings`."""
        try:
            consumers = self._consumers(ctxt)
        except AuditError:
            raise
        except Exception as exc:
            raise AuditError('placement could not be read: %s' % exc) from exc
        arqs = self._arqs(ctxt)
        try:
            build_requests, leases, mappings = self._api_records(
                set(consumers) | _arq_instances(arqs)
            )
            cells = self.cells.refresh()
        except Exception as exc:
            raise AuditError(
                'the API database could not be read: %s' % exc
            ) from exc
        # The allocations a move's migration holds are not an instance's;
        # those of a move that is over are reported apart.
        holding, ended = self._migration_consumers(cells, consumers)
        for uuid in holding:
            consumers.pop(uuid, None)
        ended = {
            uuid: (row, consumers.pop(uuid), cell)
            for uuid, (row, cell) in ended.items()
            if uuid in consumers
        }
        named = set(consumers) | set(build_requests) | set(mappings)
        instances = self._cell_records(cells, named | _arq_instances(arqs))
        # A live instance no source above named: its mapping is read after
        # its row (a build maps the instance to its cell after creating
        # it there, so the mapping is not missed).
        unread = set(instances) - set(mappings)
        if unread:
            try:
                with self.api_db.session() as session:
                    mappings.update(
                        _by_uuid(instance_mappings.of(session, unread))
                    )
            except Exception as exc:
                raise AuditError(
                    'the API database could not be read: %s' % exc
                ) from exc
        roots = {}
        if _beside_their_node(consumers, instances):
            # Only then: a cloud without nested providers is read in one
            # placement request.
            roots = self._roots(ctxt)
        return Snapshot(
            consumers,
            arqs,
            build_requests,
            mappings,
            instances,
            cells,
            leases,
            ended,
            roots,
            self._live_waiting,
        )

    def historic_mappings(self, snap):
        """``(checked, [Disagreement])``: every mapping to a cell that
        ``snap`` did not read, a page at a time (memory bounded by the page,
        not by the number of instances ever built), checked against its
        cell: ``mapping_to_missing_instance`` where the cell has no row of
        that instance, deleted or not."""
        cells = {c.id: c for c in snap.cells}
        checked, found, after = 0, [], 0
        while True:
            with self.api_db.session() as session:
                page = instance_mappings.page(session, after)
            if not page:
                return checked, found
            after = page[-1][0]
            by_cell = collections.defaultdict(list)
            for _id, uuid, cell_id in page:
                if cell_id is not None and uuid not in snap.mappings:
                    by_cell[cell_id].append(uuid)
                    checked += 1
            for cell_id, uuids in sorted(by_cell.items()):
                cell = cells.get(cell_id)
                if cell is None:
                    present = set()
                else:
                    try:
                        with self.cells.db(cell).session() as session:
                            present = instance_queries.existing(session, uuids)
                    except Exception as exc:
                        raise AuditError(
                            'the database of %s could not be read: %s'
                            % (cell.name, exc)
                        ) from exc
                found += [
                    checks.missing_instance(uuid, cell_id, snap.cells)
                    for uuid in sorted(set(uuids) - present)
                ]


def _beside_their_node(consumers, instances):
    """Whether some instance with a host holds allocations on a provider
    other than its compute node (a nested one, or another host's)."""
    for uuid, records in instances.items():
        node = next(
            (r.node_uuid for r in records if r.live and r.node_uuid), None
        )
        if node and any(rp != node for rp in consumers.get(uuid, ())):
            return True
    return False


def _arq_instances(arqs):
    return {
        a.get('instance_uuid') for a in arqs or () if a.get('instance_uuid')
    }


def _by_uuid(rows):
    return {uuid: (cell_id, created) for uuid, cell_id, created in rows}
