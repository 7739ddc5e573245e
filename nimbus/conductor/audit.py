"""The consistency audit: where the records of an instance disagree.

An instance leaves records in five places: its row in a cell database (or
cell0's), its build request and instance mapping in the API database, the
allocations of its consumer in placement, and its accelerator requests
(ARQs) in the accelerator service. :class:`Auditor` reads them all and
lists every :class:`Disagreement` by kind (:data:`KINDS`);
:meth:`Auditor.heal` repairs the kinds that are safe to repair without a
person (each re-checked just before it is repaired, by
:mod:`nimbus.conductor.audit_heal`) and leaves the others
as they are.

It reads placement first, then the ARQs, then the API database, then the
cells: the order in which a build writes them. A build under way between
the reads then looks complete, not orphaned. What a build or a delete
writes in two steps (an instance created in its cell just before its build
request goes) is reported only once it is older than ``grace`` seconds.

``nimbus-manage audit`` runs it (``--heal`` to repair) and the super
conductor runs it read-only every ``[conductor] audit_interval`` seconds.
"""

import collections
import dataclasses
import datetime

import sqlalchemy as sa

from nimbus.common import instance_states as states
from nimbus.common.db import types as db_types
from nimbus.conductor import audit_heal
from nimbus.db.api import models as api_models
from nimbus.db.cell import models as cell_models


# kind -> (healable, what it means). The order is the report's order.
KINDS = collections.OrderedDict(
    [
        (
            'orphan_allocation',
            (
                True,
                'placement holds allocations of a consumer '
                'that is no instance, build request or '
                'instance mapping anywhere',
            ),
        ),
        (
            'deleted_instance_allocation',
            (
                True,
                'placement holds allocations of '
                'an instance deleted in its '
                'cell',
            ),
        ),
        (
            'active_without_allocation',
            (False, 'an ACTIVE instance has no allocation in placement'),
        ),
        (
            'stale_build_request',
            (
                True,
                'a build request remains for an '
                'instance already in a cell (or in '
                'cell0)',
            ),
        ),
        (
            'mapping_to_missing_instance',
            (
                False,
                'an instance mapping points to '
                'a cell without that instance, '
                'or to no cell without a build '
                'request',
            ),
        ),
        (
            'instance_without_mapping',
            (False, 'an instance in a cell has no instance mapping'),
        ),
        (
            'stuck_instance',
            (
                False,
                'an instance stayed in BUILD or DELETING beyond the threshold',
            ),
        ),
        (
            'orphan_arq',
            (
                True,
                'an accelerator request is bound to an instance that is gone',
            ),
        ),
    ]
)
HEALABLE = frozenset(k for k, (heal, _) in KINDS.items() if heal)


class AuditError(Exception):
    """A source could not be read; the audit has no answer."""


@dataclasses.dataclass
class Disagreement:
    kind: str
    uuid: str  # the instance (consumer) uuid; the ARQ's for orphan_arq
    where: str  # 'placement', 'api', 'accelerator' or the cell's name
    detail: str
    instance_uuid: str = None
    healed: bool = False
    heal_error: str = None

    @property
    def healable(self):
        return self.kind in HEALABLE

    def to_dict(self):
        return {
            'kind': self.kind,
            'uuid': self.uuid,
            'where': self.where,
            'detail': self.detail,
            'instance_uuid': self.instance_uuid or self.uuid,
            'healable': self.healable,
            'healed': self.healed,
            'heal_error': self.heal_error,
        }


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

    def records(self, uuid):
        return self.instances.get(uuid, [])

    def live_record(self, uuid):
        for record in self.records(uuid):
            if record.live:
                return record
        return None


@dataclasses.dataclass
class Report:
    disagreements: list
    checked: dict

    def counts(self, unhealed_only=False):
        counts = collections.Counter(
            d.kind
            for d in self.disagreements
            if not (unhealed_only and d.healed)
        )
        return {kind: counts[kind] for kind in KINDS if counts[kind]}

    @property
    def remaining(self):
        return [d for d in self.disagreements if not d.healed]

    def summary(self):
        """One line: the count of each kind, or that all agree."""
        checked = ', '.join(
            '%d %s' % (n, what) for what, n in self.checked.items()
        )
        counts = self.counts()
        if not counts:
            return 'audit: no disagreement (%s)' % checked
        found = ', '.join('%s=%d' % kv for kv in counts.items())
        healed = sum(1 for d in self.disagreements if d.healed)
        return 'audit: %d disagreement(s): %s%s (%s)' % (
            len(self.disagreements),
            found,
            '; healed %d' % healed if healed else '',
            checked,
        )

    def to_dict(self):
        return {
            'disagreements': [d.to_dict() for d in self.disagreements],
            'counts': self.counts(),
            'remaining': self.counts(unhealed_only=True),
            'checked': dict(self.checked),
        }


class Auditor:
    """``Auditor(api_db, cells, placement, accelerator=None,
    stuck_after=3600, grace=300)``: ``cells`` is a
    :class:`nimbus.db.cells.CellDirectory`, ``placement`` a placement
    client, ``accelerator`` an accelerator client or None (then ARQs are
    not audited)."""

    def __init__(
        self,
        api_db,
        cells,
        placement,
        accelerator=None,
        stuck_after=3600,
        grace=300,
        clock=db_types.utcnow,
    ):
        self.api_db = api_db
        self.cells = cells
        self.placement = placement
        self.accelerator = accelerator
        self.stuck_after = stuck_after
        self.grace = grace
        self.clock = clock

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
            build_requests = dict(
                session.execute(
                    sa.select(
                        api_models.BuildRequest.instance_uuid,
                        api_models.BuildRequest.created_at,
                    )
                ).all()
            )
            mappings = {
                uuid: (cell_id, created)
                for uuid, cell_id, created in session.execute(
                    sa.select(
                        api_models.InstanceMapping.instance_uuid,
                        api_models.InstanceMapping.cell_id,
                        api_models.InstanceMapping.created_at,
                    )
                )
            }
        return build_requests, mappings

    def _cell_records(self, cells):
        instances = collections.defaultdict(list)
        model = cell_models.Instance
        for cell in cells:
            try:
                with self.cells.db(cell).session() as session:
                    rows = session.execute(
                        sa.select(
                            model.uuid,
                            model.vm_state,
                            model.task_state,
                            model.deleted,
                            model.created_at,
                            model.updated_at,
                            model.deleted_at,
                        )
                    ).all()
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
            build_requests, mappings = self._api_records()
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
        )

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
        found += self._check_arqs(snap)
        order = list(KINDS)
        return sorted(found, key=lambda d: (order.index(d.kind), d.uuid))

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
        for uuid, records in snap.instances.items():
            record = snap.live_record(uuid)
            if (
                record is not None
                and record.vm_state == states.ACTIVE
                and record.task_state != states.DELETING
                and not record.cell.is_cell0
                and uuid not in snap.consumers
            ):
                found.append(
                    Disagreement(
                        'active_without_allocation',
                        uuid,
                        record.cell.name,
                        'ACTIVE in %s with no allocation' % record.cell.name,
                    )
                )
        return found

    def _check_build_requests(self, snap, now):
        found = []
        for uuid in snap.build_requests:
            records = snap.records(uuid)
            if not records:
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
                where = [r.cell.name for r in snap.records(uuid)]
                cell = next(
                    (c.name for c in snap.cells if c.id == cell_id),
                    'cell id %s (unmapped)' % cell_id,
                )
                found.append(
                    Disagreement(
                        'mapping_to_missing_instance',
                        uuid,
                        'api',
                        'maps to %s, which has no such instance%s'
                        % (
                            cell,
                            '; it is in %s' % ', '.join(where)
                            if where
                            else '',
                        ),
                    )
                )
        for uuid, records in snap.instances.items():
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

    # -- running and healing -------------------------------------------

    def run(self, ctxt):
        """The read-only audit: a :class:`Report`."""
        snap = self.gather(ctxt)
        checked = collections.OrderedDict(
            [
                ('instances', sum(len(r) for r in snap.instances.values())),
                ('build requests', len(snap.build_requests)),
                ('mappings', len(snap.mappings)),
                ('consumers', len(snap.consumers)),
            ]
        )
        if snap.arqs is not None:
            checked['ARQs'] = len(snap.arqs)
        return Report(self.check(snap), checked)

    def heal(self, ctxt, report):
        """Repair the healable disagreements of ``report`` (each re-checked
        first, see :mod:`nimbus.conductor.audit_heal`); the others stay as
        they are. Returns the report."""
        return audit_heal.Healer(self).heal(ctxt, report)


def from_conf(conf, api_db, cells, placement, accelerator=None):
    """An :class:`Auditor` with the thresholds of ``[conductor]``."""
    return Auditor(
        api_db,
        cells,
        placement,
        accelerator,
        stuck_after=conf.conductor.audit_stuck_after,
        grace=conf.conductor.audit_grace,
    )
