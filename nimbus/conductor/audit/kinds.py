"""The kinds of disagreement the audit reports, and its report."""

import collections
import dataclasses

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
            'error_instance_allocation',
            (
                True,
                'placement holds allocations of an instance in ERROR '
                'that is on no host (its build failed; nothing runs)',
            ),
        ),
        (
            'ended_migration_allocation',
            (
                True,
                'placement holds allocations of a migration whose move is '
                'over (confirmed, reverted, failed...): a half-done move '
                'left the source held',
            ),
        ),
        (
            'misplaced_allocation',
            (
                True,
                'an instance with no move under way holds allocations on '
                'a host that is not its own (a half-done move)',
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
            'unscheduled_build_request',
            (
                False,
                'a build request is in no cell and nobody has scheduled '
                'it within the build request timeout (its message was '
                'lost); the super conductor schedules it again',
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
            'stuck_move',
            (
                False,
                'a resize, cold or live migrate stayed waiting for its '
                'scheduling (resize_prep, or migrating with its migration '
                'accepted) beyond the build request timeout (a process died '
                'with its message); the super conductor undoes it',
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
