"""A compute's restart after a kill -9: only the builds it had taken are
handed back; those still queued for it build when they arrive. And a build
moved to an alternate while the host looked down is never taken back."""

from nimbus.common import context
from nimbus.common.objects import Instance
from nimbus.common import instance_states as states
from nimbus.compute import journal as journal_mod
from nimbus.compute import manager as manager_mod
from tests.unit.compute.test_build import ALTERNATE
from tests.unit.compute.test_build import SELECTION
from tests.unit.compute.test_build import runner  # noqa: F401 (fixture)

# What a build message carries, and what the journal keeps: primitives.
SELECTION_P = SELECTION.to_primitive()
ALTERNATE_P = ALTERNATE.to_primitive()


def _building(uuid, task_state=states.SCHEDULING):
    return Instance(
        uuid=uuid, vm_state=states.BUILDING, task_state=task_state, node='h1'
    )


def test_journal_survives_a_new_process(tmp_path):
    journal = journal_mod.BuildJournal(str(tmp_path), 'h1')
    journal.taken('a', {'flavor': {}}, SELECTION_P, [ALTERNATE_P])
    journal.taken('b', {}, SELECTION_P, [])
    journal.settled('b')
    again = journal_mod.BuildJournal(str(tmp_path), 'h1')
    assert again.uuids() == {'a'}
    assert again.get('a')['host_list'] == [ALTERNATE_P]
    assert journal_mod.BuildJournal(str(tmp_path), 'h2').uuids() == set()


def test_an_unreadable_journal_is_ignored(tmp_path):
    journal = journal_mod.BuildJournal(str(tmp_path), 'h1')
    journal.taken('a', {}, SELECTION_P, [])
    with open(journal.path, 'w') as f:
        f.write('{torn')
    assert journal_mod.BuildJournal(str(tmp_path), 'h1').uuids() == set()


def test_the_manager_journals_a_build_when_it_takes_it(runner):  # noqa: F811
    r, conductor, driver, events = runner()
    seen = []

    class Pool:
        def submit(self, func):
            # The journal already holds the build when a worker gets it.
            seen.append(r.journal.uuids())

    manager = manager_mod.ComputeManager(r, events, pool=Pool())
    manager.build_and_run_instance(
        context.get_admin_context(),
        instance={'uuid': 'i'},
        request_spec={'flavor': {}},
        selection=SELECTION_P,
        host_list=[ALTERNATE_P],
    )
    assert seen == [{'i'}]
    assert r.journal.get('i')['host_list'] == [ALTERNATE_P]


def test_a_finished_build_leaves_the_journal(runner):  # noqa: F811
    r, conductor, driver, _ = runner()
    r.taken(Instance(uuid='i'), {}, SELECTION_P, [])
    r.build(
        context.get_admin_context(), Instance(uuid='i'), {}, SELECTION, [], []
    )
    assert conductor.state == states.ACTIVE
    assert r.journal.uuids() == set()


def test_a_failed_build_leaves_the_journal(runner):  # noqa: F811
    r, conductor, driver, _ = runner(fail=True)
    r.taken(Instance(uuid='i'), {}, SELECTION_P, [ALTERNATE_P])
    r.build(
        context.get_admin_context(),
        Instance(uuid='i'),
        {},
        SELECTION,
        [ALTERNATE],
        [],
    )
    assert ('reschedule', [ALTERNATE], 'h1') in conductor.calls
    assert r.journal.uuids() == set()


def test_restart_hands_back_taken_builds_and_leaves_queued_ones(
    runner,  # noqa: F811
):
    r, conductor, driver, _ = runner()
    # Before the kill: 'taken' was taken (in a worker's hands), 'spawned'
    # too and its guest exists; 'queued' was never taken.
    r.taken(Instance(uuid='taken'), {'flavor': {}}, SELECTION_P, [ALTERNATE_P])
    r.taken(Instance(uuid='spawned'), {}, SELECTION_P, [])
    driver.spawn(Instance(uuid='spawned'), {})
    conductor.on_host = [
        _building('taken', states.SPAWNING),
        _building('spawned', states.SPAWNING),
        _building('queued'),
    ]
    r.recover(context.get_admin_context())
    assert conductor.states['spawned'] == states.ACTIVE
    # The taken one: its claim here freed, not counted against the host,
    # handed to its alternate.
    assert ('free-here', 'taken', ['rp']) in conductor.calls
    assert ('attempt', 'h1', 'interrupted') in [
        c[:3] for c in conductor.calls if c[0] == 'attempt'
    ]
    assert ('reschedule', [ALTERNATE], 'h1') in conductor.calls
    assert r.tracker.failed_builds == 0
    # The queued one is untouched: no update, no free, no attempt.
    assert 'queued' not in conductor.states
    assert ('free', 'queued') not in conductor.calls
    assert r.journal.uuids() == set()
    # Its message arrives after the restart and it builds here.
    r.taken(Instance(uuid='queued'), {}, SELECTION_P, [])
    r.build(
        context.get_admin_context(),
        Instance(uuid='queued'),
        {},
        SELECTION,
        [],
        [],
    )
    assert conductor.states['queued'] == states.ACTIVE


def test_restart_forgets_taken_builds_no_longer_on_the_host(
    runner,  # noqa: F811
):
    r, conductor, driver, _ = runner()
    r.taken(Instance(uuid='moved'), {}, SELECTION_P, [ALTERNATE_P])
    conductor.on_host = []
    r.recover(context.get_admin_context())
    assert r.journal.uuids() == set()
    assert not [c for c in conductor.calls if c[0] != 'update']


def test_a_build_moved_away_while_spawning_is_not_taken_back(
    runner,  # noqa: F811
):
    r, conductor, driver, _ = runner()
    # The build check moved 'i' to h2 while this host looked down (it was
    # frozen mid-spawn): the swap to ACTIVE names h1 and loses.
    spawn = driver.spawn

    def spawn_then_move(instance, allocations, accel_info=None, power_on=True):
        spawn(instance, allocations, accel_info)
        conductor.hosts['i'] = 'h2'

    driver.spawn = spawn_then_move
    r.build(
        context.get_admin_context(), Instance(uuid='i'), {}, SELECTION, [], []
    )
    assert conductor.state == states.BUILDING  # h2 builds it
    assert driver.list_instances() == []
    # Only this host's share of the allocation goes, never h2's claim.
    assert ('free-here', 'i', ['rp']) in conductor.calls
    assert ('free', 'i') not in conductor.calls


def test_a_queued_build_moved_away_meanwhile_is_not_spawned(
    runner,  # noqa: F811
):
    r, conductor, driver, _ = runner()
    conductor.hosts['i'] = 'h2'
    r.build(
        context.get_admin_context(), Instance(uuid='i'), {}, SELECTION, [], []
    )
    assert driver.list_instances() == []
    assert not [c for c in conductor.calls if c[0].startswith('free')]
