"""The consistency audit: where the records of an instance disagree.

An instance leaves records in five places: its row in a cell database (or
cell0's), its build request and instance mapping in the API database, the
allocations of its consumer in placement, and its accelerator requests
(ARQs) in the accelerator service. :class:`Auditor` reads them all and
lists every :class:`Disagreement` by kind (:data:`KINDS`);
:meth:`Auditor.heal` repairs the kinds that are safe to repair without a
person (each re-checked just before it is repaired, by
:mod:`nimbus.conductor.audit.heal`) and leaves the others
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

from nimbus.common.db import types as db_types
from nimbus.conductor.audit import checks
from nimbus.conductor.audit import heal as heal_mod
from nimbus.conductor.audit import snapshot
from nimbus.conductor.audit.kinds import HEALABLE  # noqa: F401
from nimbus.conductor.audit.kinds import KINDS  # noqa: F401
from nimbus.conductor.audit.kinds import AuditError  # noqa: F401
from nimbus.conductor.audit.kinds import Disagreement  # noqa: F401
from nimbus.conductor.audit.kinds import Report
from nimbus.conductor.audit.snapshot import InstanceRecord  # noqa: F401
from nimbus.conductor.audit.snapshot import Snapshot  # noqa: F401


class Auditor(snapshot.Reader, checks.Checks):
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
        build_request_timeout=None,
    ):
        self.api_db = api_db
        self.cells = cells
        self.placement = placement
        self.accelerator = accelerator
        self.stuck_after = stuck_after
        self.grace = grace
        self.build_request_timeout = build_request_timeout
        self.clock = clock

    # -- running and healing -------------------------------------------

    def run(self, ctxt):
        """The read-only audit: a :class:`Report`. Besides the snapshot it
        walks every other instance mapping (:meth:`historic_mappings`);
        the recovery pass checks the snapshot alone."""
        snap = self.gather(ctxt)
        historic, more = self.historic_mappings(snap)
        checked = collections.OrderedDict(
            [
                ('instances', sum(len(r) for r in snap.instances.values())),
                ('build requests', len(snap.build_requests)),
                ('mappings', len(snap.mappings) + historic),
                ('consumers', len(snap.consumers)),
            ]
        )
        if snap.arqs is not None:
            checked['ARQs'] = len(snap.arqs)
        return Report(checks.in_order(self.check(snap) + more), checked)

    def heal(self, ctxt, report):
        """Repair the healable disagreements of ``report`` (each re-checked
        first, see :mod:`nimbus.conductor.audit.heal`); the others stay as
        they are. Returns the report."""
        return heal_mod.Healer(self).heal(ctxt, report)


def from_conf(conf, api_db, cells, placement, accelerator=None):
    """An :class:`Auditor` with the thresholds of ``[conductor]``."""
    return Auditor(
        api_db,
        cells,
        placement,
        accelerator,
        stuck_after=conf.conductor.audit_stuck_after,
        grace=conf.conductor.audit_grace,
        build_request_timeout=conf.conductor.build_request_timeout,
    )
