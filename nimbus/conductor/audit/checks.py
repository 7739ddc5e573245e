"""The checks of a snapshot, one per store: which records disagree.

What a build or a delete writes in two steps (an instance created in its
cell just before its build request goes) is reported only once it is
older than ``grace`` seconds.
"""

import datetime

from nimbus.common import instance_states as states
from nimbus.conductor.audit.kinds import KINDS
from nimbus.conductor.audit.kinds import Disagreement


def in_order(found):
    """``found`` (Disagreements) in :data:`KINDS` order, by uuid within a
    kind."""
    order = list(KINDS)
    return sorted(found, key=lambda d: (order.index(d.kind), d.uuid or ''))


def missing_instance(uuid, cell_id, cells, where=()):
    """The ``mapping_to_missing_instance`` of a mapping of ``uuid`` to cell
    ``cell_id`` (one of ``cells``, or none) that has no row of it; ``where``:
    the names of the cells that do."""
    cell = next(
        (c.name for c in cells if c.id == cell_id),
        'cell id %s (unmapped)' % cell_id,
    )
    return Disagreement(
        'mapping_to_missing_instance',
        uuid,
        'api',
        'maps to %s, which has no such instance%s'
        % (cell, '; it is in %s' % ', '.join(where) if where else ''),
    )


def _age(when, now):
    return int((now - when).total_seconds()) if when else -1


def _parsed(value, now):
    """An ISO 8601 time of a row dict, comparable with ``now``."""
    if not value:
        return None
    when = datetime.datetime.fromisoformat(value)
    if (when.tzinfo is None) != (now.tzinfo is None):
        when = when.replace(tzinfo=now.tzinfo)
    return when


def _off_host(snap, record):
    """The providers ``record``'s instance holds outside its host's tree,
    when it has no task under way (a move's claims span two hosts)."""
    if (
        record.task_state is not None
        or not record.host
        or not record.node_uuid
        or record.uuid not in snap.consumers
    ):
        return []
    return sorted(
        rp
        for rp in snap.consumers[record.uuid]
        if snap.roots.get(rp, rp) != record.node_uuid
    )


class Checks:
    """Mixed into :class:`~nimbus.conductor.audit.Auditor` (its
    ``stuck_after``, ``grace`` and ``clock``)."""

    # -- checking ------------------------------------------------------

    def _older(self, when, seconds, now):
        return when is None or (now - when).total_seconds() >= seconds

    def check(self, snap, now=None):
        """Every disagreement in a snapshot, in :data:`KINDS` order."""
        now = now or self.clock()
        found = []
        found += self._check_allocations(snap, now)
        found += self._check_build_requests(snap, now)
        found += self._check_mappings(snap, now)
        found += self._check_instances(snap, now)
        found += self._check_moves(snap, now)
        found += self._check_arqs(snap)
        return in_order(found)

    def _check_allocations(self, snap, now):
        found = []
        for uuid, allocations in snap.consumers.items():
            providers = ', '.join(sorted(allocations))
            records = snap.records(uuid)
            if (
                not records
                and uuid not in snap.build_requests
                and uuid not in snap.mappings
            ):
                found.append(
                    Disagreement(
                        'orphan_allocation',
                        uuid,
                        'placement',
                        'allocations on %s; no instance, build request or '
                        'mapping' % providers,
                    )
                )
            elif (
                records
                and snap.live_record(uuid) is None
                and uuid not in snap.build_requests
            ):
                record = records[0]
                if self._older(
                    record.deleted_at or record.changed_at, self.grace, now
                ):
                    found.append(
                        Disagreement(
                            'deleted_instance_allocation',
                            uuid,
                            'placement',
                            'allocations on %s; the instance is deleted in %s'
                            % (providers, record.cell.name),
                        )
                    )
        for uuid in snap.instances:
            record = snap.live_record(uuid)
            if (
                record is not None
                and record.vm_state == states.ERROR
                and record.task_state is None
                and (record.host is None or record.cell.is_cell0)
                and uuid in snap.consumers
                and uuid not in snap.build_requests
                and self._older(record.changed_at, self.grace, now)
            ):
                found.append(
                    Disagreement(
                        'error_instance_allocation',
                        uuid,
                        'placement',
                        'allocations on %s; the instance is in ERROR on '
                        'no host in %s'
                        % (
                            ', '.join(sorted(snap.consumers[uuid])),
                            record.cell.name,
                        ),
                    )
                )
            if (
                record is not None
                and record.vm_state in states.HOLDS_HOST
                and record.task_state != states.DELETING
                and not record.cell.is_cell0
                and uuid not in snap.consumers
            ):
                found.append(
                    Disagreement(
                        'active_without_allocation',
                        uuid,
                        record.cell.name,
                        '%s in %s with no allocation'
                        % (
                            states.api_status(record.vm_state),
                            record.cell.name,
                        ),
                    )
                )
        return found

    def _check_build_requests(self, snap, now):
        found = []
        timeout = getattr(self, 'build_request_timeout', None)
        for uuid in snap.build_requests:
            records = snap.records(uuid)
            if not records:
                created, leased = snap.leases.get(
                    uuid, (snap.build_requests[uuid], None)
                )
                if timeout and self._older(leased or created, timeout, now):
                    found.append(
                        Disagreement(
                            'unscheduled_build_request',
                            uuid,
                            'api',
                            'in no cell; %s'
                            % (
                                'its schedule lease is %d s old'
                                % _age(leased, now)
                                if leased
                                else 'never scheduled, %d s after it was '
                                'created' % _age(created, now)
                            ),
                        )
                    )
                continue
            record = snap.live_record(uuid) or records[0]
            if self._older(record.created_at, self.grace, now):
                found.append(
                    Disagreement(
                        'stale_build_request',
                        uuid,
                        'api',
                        'the instance is already in %s (%s)'
                        % (record.cell.name, record.vm_state),
                    )
                )
        return found

    def _check_mappings(self, snap, now):
        found = []
        for uuid, (cell_id, created_at) in snap.mappings.items():
            if cell_id is None:
                if (
                    uuid in snap.build_requests
                    or snap.records(uuid)
                    or not self._older(created_at, self.grace, now)
                ):
                    continue
                found.append(
                    Disagreement(
                        'mapping_to_missing_instance',
                        uuid,
                        'api',
                        'maps to no cell and there is no build request',
                    )
                )
            elif not any(r.cell.id == cell_id for r in snap.records(uuid)):
                found.append(
                    missing_instance(
                        uuid,
                        cell_id,
                        snap.cells,
                        [r.cell.name for r in snap.records(uuid)],
                    )
                )
        for uuid, _records in snap.instances.items():
            record = snap.live_record(uuid)
            if record is not None and uuid not in snap.mappings:
                found.append(
                    Disagreement(
                        'instance_without_mapping',
                        uuid,
                        record.cell.name,
                        '%s in %s has no instance mapping'
                        % (record.vm_state, record.cell.name),
                    )
                )
        return found

    def _check_instances(self, snap, now):
        found = []
        for uuid in snap.instances:
            record = snap.live_record(uuid)
            if record is None:
                continue
            stuck = (
                'BUILD'
                if record.vm_state == states.BUILDING
                else 'DELETING'
                if record.task_state == states.DELETING
                else None
            )
            if stuck and self._older(record.changed_at, self.stuck_after, now):
                age = int((now - record.changed_at).total_seconds())
                found.append(
                    Disagreement(
                        'stuck_instance',
                        uuid,
                        record.cell.name,
                        'in %s for %d s (threshold %d s)'
                        % (stuck, age, self.stuck_after),
                    )
                )
        return found

    def _check_moves(self, snap, now):
        """What a half-done move left: a migration that is over still
        holding allocations; an instance with no task holding allocations
        off its host; a move waiting for its scheduling too long."""
        found = []
        for uuid, (row, allocations, cell) in snap.ended.items():
            changed = _parsed(
                row.get('updated_at') or row.get('created_at'), now
            )
            if not self._older(changed, self.grace, now):
                continue
            found.append(
                Disagreement(
                    'ended_migration_allocation',
                    uuid,
                    'placement',
                    'allocations on %s; migration of %s is %s in %s'
                    % (
                        ', '.join(sorted(allocations)),
                        row['instance_uuid'],
                        row['status'],
                        cell,
                    ),
                    instance_uuid=row['instance_uuid'],
                )
            )
        timeout = getattr(self, 'build_request_timeout', None)
        for uuid in snap.instances:
            record = snap.live_record(uuid)
            if record is None or record.cell.is_cell0:
                continue
            waiting = record.task_state == states.RESIZE_PREP or (
                record.task_state == states.MIGRATING
                and uuid in snap.live_waiting
            )
            if (
                waiting
                and timeout
                and self._older(record.changed_at, timeout, now)
            ):
                found.append(
                    Disagreement(
                        'stuck_move',
                        uuid,
                        record.cell.name,
                        'in %s for %d s (timeout %d s)'
                        % (
                            record.task_state,
                            _age(record.changed_at, now),
                            timeout,
                        ),
                    )
                )
            off = _off_host(snap, record)
            if off and self._older(record.changed_at, self.grace, now):
                found.append(
                    Disagreement(
                        'misplaced_allocation',
                        uuid,
                        'placement',
                        'allocations on %s; the instance is on %s (%s)'
                        % (', '.join(off), record.host, record.node_uuid),
                    )
                )
        return found

    def _check_arqs(self, snap):
        found = []
        for arq in snap.arqs or ():
            instance = arq.get('instance_uuid')
            if (
                not instance
                or snap.live_record(instance) is not None
                or instance in snap.build_requests
            ):
                continue
            found.append(
                Disagreement(
                    'orphan_arq',
                    arq.get('uuid'),
                    'accelerator',
                    'bound to instance %s, which is %s'
                    % (
                        instance,
                        'deleted' if snap.records(instance) else 'nowhere',
                    ),
                    instance_uuid=instance,
                )
            )
        return found
