"""nimbus.conductor.audit: which snapshot is which disagreement (the checks
are pure functions of a snapshot and the time)."""

import datetime

import pytest

from nimbus.conductor import audit
from nimbus.db import cells as cells_mod

NOW = datetime.datetime(2026, 1, 1, 12, 0, 0)
CELL0 = cells_mod.Cell(1, cells_mod.CELL0_UUID, 'cell0', 'none:///', 'x')
CELL1 = cells_mod.Cell(2, 'c1', 'cell1', 'inproc:///c1', 'y')
U = 'aaaaaaaa-0000-0000-0000-000000000001'
RP = 'rp-1'


def ago(seconds):
    return NOW - datetime.timedelta(seconds=seconds)


def record(
    cell=CELL1, vm_state='active', task_state=None, deleted=False, age=1000
):
    return audit.InstanceRecord(
        U,
        cell,
        vm_state,
        task_state,
        deleted,
        ago(age),
        ago(age),
        ago(age) if deleted else None,
    )


def snap(
    consumers=(),
    instances=(),
    build_request=False,
    mapping='cell',
    arq_instance=None,
):
    mappings = {}
    if mapping == 'cell':
        mappings[U] = (
            instances[0].cell.id if instances else CELL1.id,
            ago(1000),
        )
    elif mapping == 'none':
        mappings[U] = (None, ago(1000))
    return audit.Snapshot(
        consumers={c: {RP: {'VCPU': 1}} for c in consumers},
        arqs=[{'uuid': 'arq-1', 'instance_uuid': arq_instance}]
        if arq_instance
        else [],
        build_requests={U: ago(1000)} if build_request else {},
        mappings=mappings,
        instances={U: list(instances)} if instances else {},
        cells=[CELL0, CELL1],
    )


def kinds(snapshot, grace=300, stuck_after=3600):
    checker = audit.Auditor(
        None, None, None, grace=grace, stuck_after=stuck_after
    )
    return [d.kind for d in checker.check(snapshot, now=NOW)]


@pytest.mark.parametrize(
    'snapshot, expected',
    [
        # Healthy: ACTIVE with its allocation; ERROR in cell0 without one; a
        # build request still scheduling with its claim.
        (snap([U], [record()]), []),
        (snap([], [record(CELL0, 'error')]), []),
        (snap([U], [], build_request=True, mapping='none'), []),
        # Deleted everywhere, nothing left: healthy too.
        (snap([], [record(vm_state='deleted', deleted=True)]), []),
        # One of each kind.
        (snap([U], [], mapping=None), ['orphan_allocation']),
        (
            snap([U], [record(vm_state='deleted', deleted=True)]),
            ['deleted_instance_allocation'],
        ),
        (snap([], [record()]), ['active_without_allocation']),
        (snap([U], [record()], build_request=True), ['stale_build_request']),
        (
            snap([], [record(CELL0, 'error')], build_request=True),
            ['stale_build_request'],
        ),
        (snap([], [], mapping='cell'), ['mapping_to_missing_instance']),
        (snap([], [], mapping='none'), ['mapping_to_missing_instance']),
        (snap([U], [record()], mapping=None), ['instance_without_mapping']),
        (
            snap(
                [U],
                [record(vm_state='building', task_state='spawning', age=7200)],
            ),
            ['stuck_instance'],
        ),
        (
            snap([U], [record(task_state='deleting', age=7200)]),
            ['stuck_instance'],
        ),
        (snap([], [], mapping=None, arq_instance=U), ['orphan_arq']),
        (
            snap(
                [], [record(vm_state='deleted', deleted=True)], arq_instance=U
            ),
            ['orphan_arq'],
        ),
        # An ARQ of a live instance is fine.
        (snap([U], [record()], arq_instance=U), []),
    ],
)
def test_each_snapshot_is_its_kind(snapshot, expected):
    assert kinds(snapshot) == expected


def test_two_step_writes_wait_for_the_grace():
    young = record(age=10)
    assert kinds(snap([U], [young], build_request=True)) == []
    assert kinds(snap([U], [young], build_request=True), grace=5) == [
        'stale_build_request'
    ]
    deleted = record(vm_state='deleted', deleted=True, age=10)
    assert kinds(snap([U], [deleted])) == []
    assert kinds(snap([U], [deleted]), grace=0) == [
        'deleted_instance_allocation'
    ]


def test_stuck_needs_the_threshold():
    building = record(vm_state='building', task_state='spawning', age=100)
    assert kinds(snap([U], [building])) == []
    assert kinds(snap([U], [building]), stuck_after=100) == ['stuck_instance']


def test_report_counts_summary_and_remaining():
    items = [
        audit.Disagreement('orphan_arq', 'a', 'accelerator', 'x'),
        audit.Disagreement('orphan_allocation', 'b', 'placement', 'y'),
        audit.Disagreement('stuck_instance', 'c', 'cell1', 'z'),
    ]
    items[0].healed = True
    report = audit.Report(items, {'instances': 3})
    assert report.counts() == {
        'orphan_allocation': 1,
        'stuck_instance': 1,
        'orphan_arq': 1,
    }
    assert report.counts(unhealed_only=True) == {
        'orphan_allocation': 1,
        'stuck_instance': 1,
    }
    assert [d.uuid for d in report.remaining] == ['b', 'c']
    assert report.summary() == (
        'audit: 3 disagreement(s): orphan_allocation=1, stuck_instance=1, '
        'orphan_arq=1; healed 1 (3 instances)'
    )
    assert (
        audit.Report([], {'instances': 0}).summary()
        == 'audit: no disagreement (0 instances)'
    )
    assert set(audit.HEALABLE) == {
        'orphan_allocation',
        'deleted_instance_allocation',
        'error_instance_allocation',
        'ended_migration_allocation',
        'misplaced_allocation',
        'stale_build_request',
        'orphan_arq',
    }


@pytest.mark.parametrize(
    'leased_ago, created_ago, expected',
    [
        # Never leased: its message was lost once it is older than the
        # timeout; a young one's cast may still be queued.
        (None, 1000, ['unscheduled_build_request']),
        (None, 100, []),
        # Leased: a worker holds it until the lease expires.
        (100, 1000, []),
        (400, 1000, ['unscheduled_build_request']),
    ],
)
def test_a_build_request_nobody_finished_scheduling(
    leased_ago, created_ago, expected
):
    snapshot = snap(build_request=True, mapping='none')
    snapshot.build_requests = {U: ago(created_ago)}
    snapshot.leases = {
        U: (ago(created_ago), ago(leased_ago) if leased_ago else None)
    }
    checker = audit.Auditor(None, None, None, build_request_timeout=300)
    found = checker.check(snapshot, now=NOW)
    assert [d.kind for d in found] == expected
    # Without a timeout (an auditor not built from the config) it is not
    # reported.
    assert kinds(snapshot) == []


def test_an_error_instance_on_no_host_holding_an_allocation():
    failed = record(vm_state='error')
    assert kinds(snap(consumers=[U], instances=[failed])) == [
        'error_instance_allocation'
    ]
    # On a host (its guest may still use the room), or without an
    # allocation, or while being deleted: not this kind.
    on_host = record(vm_state='error')
    on_host.host = 'host-1'
    assert kinds(snap(consumers=[U], instances=[on_host])) == []
    assert kinds(snap(instances=[failed])) == []
    deleting = record(vm_state='error', task_state='deleting')
    assert 'error_instance_allocation' not in kinds(
        snap(consumers=[U], instances=[deleting])
    )
