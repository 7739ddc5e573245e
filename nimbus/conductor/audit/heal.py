"""Repairing what the audit found (``nimbus-manage audit --heal``).

Only the kinds in :data:`nimbus.conductor.audit.HEALABLE`. Each is re-read
just before it is repaired: a consumer that got a build request since the
audit read placement, or an instance that came back, is left alone and
reported "no longer true; left alone". A repair that fails is reported
with its error; the others go on.
"""

from oslo_log import log as logging

from nimbus.common import instance_states as states
from nimbus.db import build_requests
from nimbus.db import cell_instances as instances
from nimbus.db import cell_migrations
from nimbus.db import instance_mappings
from nimbus.db.cell_instances import queries as instance_queries

LOG = logging.getLogger(__name__)


class Healer:
    """Repairs with the sources of one :class:`~nimbus.conductor.audit.
    Auditor` (its API database, cell directory, placement and accelerator
    clients)."""

    def __init__(self, auditor):
        self.auditor = auditor

    def heal(self, ctxt, report):
        """Repair the healable disagreements of ``report``; the others stay
        as they are. Returns the report."""
        for item in report.disagreements:
            if not item.healable:
                continue
            try:
                item.healed = bool(
                    getattr(self, '_heal_' + item.kind)(ctxt, item)
                )
                if not item.healed:
                    item.heal_error = 'no longer true; left alone'
            except Exception as exc:  # noqa: BLE001 - one failed repair does not stop the others
                LOG.warning(
                    'Healing %s %s failed: %s', item.kind, item.uuid, exc
                )
                item.heal_error = str(exc)
        healed = [d for d in report.disagreements if d.healed]
        if healed:
            LOG.info(
                'audit healed %d disagreement(s): %s',
                len(healed),
                ', '.join('%s %s' % (d.kind, d.uuid) for d in healed),
            )
        return report

    def _a_moves_migration(self, uuid):
        for cell in self.auditor.cells.cells():
            with self.auditor.cells.db(cell).session() as session:
                if cell_migrations.holding(session, [uuid]):
                    return True
        return False

    def _instance_rows(self, uuid):
        records = []
        for cell in self.auditor.cells.cells():
            with self.auditor.cells.db(cell).session() as session:
                row = instance_queries.state_of(session, uuid)
            if row is not None:
                records.append(
                    (cell, bool(row.deleted) or row.vm_state == states.DELETED)
                )
        return records

    def _api_knows(self, uuid):
        with self.auditor.api_db.session() as session:
            return build_requests.exists(
                session, uuid
            ) or instance_mappings.exists(session, uuid)

    def _heal_orphan_allocation(self, ctxt, item):
        if self._api_knows(item.uuid) or self._instance_rows(item.uuid):
            return False
        if self._a_moves_migration(item.uuid):
            return False
        self.auditor.placement.remove_allocations(ctxt, item.uuid)
        return True

    def _heal_deleted_instance_allocation(self, ctxt, item):
        rows = self._instance_rows(item.uuid)
        if not rows or not all(deleted for _cell, deleted in rows):
            return False
        if self._api_knows_build(item.uuid):
            return False
        self.auditor.placement.remove_allocations(ctxt, item.uuid)
        return True

    def _heal_error_instance_allocation(self, ctxt, item):
        if self._api_knows_build(item.uuid):
            return False
        for cell in self.auditor.cells.cells():
            with self.auditor.cells.db(cell).session() as session:
                row = instance_queries.state_of(session, item.uuid)
            if row is None or row.deleted or row.vm_state == states.DELETED:
                continue
            if not (
                row.vm_state == states.ERROR
                and row.task_state is None
                and (row.host is None or cell.is_cell0)
            ):
                return False
        self.auditor.placement.remove_allocations(ctxt, item.uuid)
        return True

    def _heal_stale_build_request(self, ctxt, item):
        rows = self._instance_rows(item.uuid)
        if not rows:
            return False
        live = [cell for cell, deleted in rows if not deleted]
        cell = (live or [rows[0][0]])[0]
        with self.auditor.api_db.session() as session:
            deleted = build_requests.delete(session, [item.uuid])
            # The mapping follows the instance when the build never got
            # as far as recording its cell.
            instance_mappings.set_cell(
                session, item.uuid, cell.id, only_unmapped=True
            )
        return bool(deleted)

    def _heal_orphan_arq(self, ctxt, item):
        instance = item.instance_uuid
        if self._api_knows_build(instance) or any(
            not deleted for _cell, deleted in self._instance_rows(instance)
        ):
            return False
        self.auditor.accelerator.delete_arqs(ctxt, [item.uuid])
        return True

    def _heal_ended_migration_allocation(self, ctxt, item):
        """A migration whose move is over holds nothing any more."""
        for cell in self.auditor.cells.cells():
            with self.auditor.cells.db(cell).session() as session:
                if cell_migrations.ended(session, [item.uuid]):
                    self.auditor.placement.remove_allocations(ctxt, item.uuid)
                    return True
        return False

    def _heal_misplaced_allocation(self, ctxt, item):
        """An instance with no task holds what it holds on its own host's
        tree only; with nothing there, what its flavor asks of its host
        (VCPU, MEMORY_MB, DISK_GB)."""
        row = None
        for cell in self.auditor.cells.cells():
            with self.auditor.cells.db(cell).session() as session:
                found = instances.get(session, item.uuid)
                if found is not None and not found.deleted:
                    row = instances.to_dict(found)
                    break
        if (
            row is None
            or row['task_state'] is not None
            or not row['host']
            or not row.get('compute_node_uuid')
        ):
            return False
        node = row['compute_node_uuid']
        roots = self.auditor._roots(ctxt)
        current = self.auditor.placement.get_allocations_for_consumer(
            ctxt, item.uuid
        )
        held = {
            rp: dict(a.get('resources') or {})
            for rp, a in (current.get('allocations') or {}).items()
        }
        kept = {rp: r for rp, r in held.items() if roots.get(rp, rp) == node}
        if kept == held:
            return False
        if not kept:
            flavor = row.get('flavor') or {}
            kept = {
                node: {
                    rc: int(amount)
                    for rc, amount in (
                        ('VCPU', flavor.get('vcpus')),
                        ('MEMORY_MB', flavor.get('memory_mb')),
                        ('DISK_GB', flavor.get('root_gb')),
                    )
                    if amount
                }
            }
        self.auditor.placement.replace_allocations(
            ctxt,
            item.uuid,
            kept,
            current.get('project_id') or row.get('project_id'),
            current.get('user_id') or row.get('user_id'),
        )
        return True

    def _api_knows_build(self, uuid):
        with self.auditor.api_db.session() as session:
            return build_requests.exists(session, uuid)
