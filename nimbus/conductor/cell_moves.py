"""The cell conductor's part of a cold move (resize, cold migrate): one
step of the move in one transaction of the cell's database, for the
computes (which hold no database credentials).

:func:`move_step` swaps the migration's status (compare-and-swap on the
status it expects) and the instance's state together: either both hold
or neither does, so a step delivered twice, or one racing a delete or a
reset, changes nothing and says so (None).
"""

from nimbus.common import instance_states as states
from nimbus.common.objects import Instance
from nimbus.common.objects import migration as migration_obj
from nimbus.db import cell_instances as instances
from nimbus.db import cell_migrations
from nimbus.db import instance_actions

# A cold move's statuses while it is under way (``finished``: waiting for
# its confirm or revert).
UNDER_WAY = (
    'pre-migrating',
    'migrating',
    'post-migrating',
    'finished',
    'confirming',
    'reverting',
)


def move_step(
    cell_db,
    instance_uuid,
    migration_uuid,
    expected_statuses,
    status,
    expected_vm_states,
    expected_task_states,
    updates,
    migration_updates=None,
):
    """Move the migration from one of ``expected_statuses`` to ``status``
    (with ``migration_updates``: dest_compute, dest_node...) and
    compare-and-swap ``updates`` onto the instance (``expected_vm_states``,
    ``expected_task_states``; ``updates`` may carry ``flavor``, ``host``,
    ``node`` and a ``fault``). Returns ``(instance, migration)`` (an
    Instance and a Migration) after the step, or None when either swap
    did not hold (nothing is changed then)."""
    migration_obj.check_status(status)
    try:
        with cell_db.session() as session:
            if not cell_migrations.set_status(
                session,
                migration_uuid,
                status,
                expected=list(expected_statuses),
                **(migration_updates or {}),
            ):
                raise _NoSwap()
            row = instances.transition(
                session,
                instance_uuid,
                list(expected_vm_states),
                dict(updates),
                expected_task_states=list(expected_task_states),
            )
            if row is None:
                raise _NoSwap()
            instance = Instance(**instances.to_dict(row))
            migration = migration_obj.Migration.from_row(
                cell_migrations.get(session, migration_uuid)
            )
    except _NoSwap:
        return None
    return instance, migration


class _NoSwap(Exception):
    """One of the swaps did not hold: the transaction is rolled back."""


def migration_of(cell_db, migration_uuid):
    """The migration (a Migration), or None."""
    with cell_db.session() as session:
        row = cell_migrations.get(session, migration_uuid)
    return None if row is None else migration_obj.Migration.from_row(row)


def take_unconfirmed(cell_db, host, seconds, request_id_for, cross_cell=False):
    """Auto-confirm (``[DEFAULT] resize_confirm_window``): the resizes and
    cold migrations that finished on ``host`` (their destination) more
    than ``seconds`` ago, each taken for its confirm in one transaction
    (migration ``confirming``, task ``resize_confirming``, an instance
    action ``confirmResize`` under ``request_id_for(migration uuid)``).
    Returns the Migrations taken; one a user confirmed or reverted
    meanwhile is left out. ``cross_cell``: instead, the cross-cell moves
    shown in this cell (their target's migrations), whatever their host,
    which the super conductor confirms
    (:mod:`nimbus.conductor.cross_cell_recovery`)."""
    with cell_db.session() as session:
        waiting = [
            m
            for m in cell_migrations.with_status(
                session,
                ['finished'],
                [migration_obj.RESIZE, migration_obj.MIGRATION],
                older_than=seconds,
            )
            # A cross-cell move's end goes through the super conductor,
            # which this cell's destination cannot reach: the super
            # conductor takes those itself.
            if (
                m['cross_cell_move'] and not m['hidden']
                if cross_cell
                else m['dest_compute'] == host and not m['cross_cell_move']
            )
        ]
    taken = []
    for row in waiting:
        request_id = request_id_for(row['uuid'])
        try:
            with cell_db.session() as session:
                if not cell_migrations.set_status(
                    session, row['uuid'], 'confirming', expected=['finished']
                ):
                    raise _NoSwap()
                if (
                    instances.transition(
                        session,
                        row['instance_uuid'],
                        [states.RESIZED],
                        {'task_state': states.RESIZE_CONFIRMING},
                        expected_task_states=[None],
                    )
                    is None
                ):
                    raise _NoSwap()
                instance_actions.start(
                    session,
                    row['instance_uuid'],
                    'confirmResize',
                    request_id,
                    None,
                    row.get('project_id'),
                )
        except _NoSwap:
            continue
        row = dict(row, status='confirming')
        migration = migration_obj.Migration.from_row(row)
        migration.details = dict(migration.details, request_id=request_id)
        taken.append(migration)
    return taken


def live_migrations_from(cell_db, host):
    """The live migrations away from ``host`` under way on it (queued,
    preparing, running: the source has them), as Migrations."""
    with cell_db.session() as session:
        rows = cell_migrations.from_source(
            session,
            host,
            ['queued', 'preparing', 'running'],
            [migration_obj.LIVE_MIGRATION],
        )
    return [migration_obj.Migration.from_row(r) for r in rows]


def moves_of_host(cell_db, host):
    """The cold moves (resize, cold migrate) in progress with ``host`` as
    their source or destination, each as ``(instance, migration)``
    (Instance, Migration; the instance None when it is gone): what a
    compute starting again after a crash settles, and the guests it must
    not take for orphans (a source keeps its guest until the confirm)."""
    types = [migration_obj.RESIZE, migration_obj.MIGRATION]
    found = []
    with cell_db.session() as session:
        rows = [
            row
            for row in cell_migrations.with_status(session, UNDER_WAY, types)
            if host in (row['source_compute'], row['dest_compute'])
        ]
        for row in rows:
            instance = instances.get(session, row['instance_uuid'])
            if instance is not None and instance.deleted:
                instance = None
            found.append(
                (
                    None
                    if instance is None
                    else Instance(**instances.to_dict(instance)),
                    migration_obj.Migration.from_row(row),
                )
            )
    return found
