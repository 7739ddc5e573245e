"""A build message delivered twice: the compute takes the second copy only
once the first one's build is settled, when the instance is no longer
building and the copy changes nothing."""

from nimbus.common import context
from nimbus.common import instance_states as states
from nimbus.common.objects import Instance
from nimbus.compute import journal as journal_mod
from nimbus.compute import manager as manager_mod
from tests.unit.compute.test_build import SELECTION
from tests.unit.compute.test_build import runner  # noqa: F401 (fixture)
from tests.unit.compute.test_restart import SELECTION_P


class Pool:
    """Holds the submitted builds instead of running them."""

    def __init__(self):
        self.jobs = []

    def submit(self, func):
        self.jobs.append(func)


def _message(manager, uuid):
    manager.build_and_run_instance(
        context.get_admin_context(),
        instance={'uuid': uuid},
        request_spec={'flavor': {}},
        selection=SELECTION_P,
        host_list=[],
    )


def test_journal_refuses_a_build_taken_and_not_settled(tmp_path):
    journal = journal_mod.BuildJournal(str(tmp_path), 'h1')
    assert journal.taken('a', {}, SELECTION_P, []) is True
    assert journal.taken('a', {}, SELECTION_P, []) is False
    assert journal.taken('b', {}, SELECTION_P, []) is True
    journal.settled('a')
    assert journal.taken('a', {}, SELECTION_P, []) is True


def test_a_previous_process_s_entries_do_not_block_a_queued_build(tmp_path):
    # Written before a kill -9; the same build's message still queued
    # arrives after the restart (recover() handles the entry itself).
    journal_mod.BuildJournal(str(tmp_path), 'h1').taken(
        'a', {}, SELECTION_P, []
    )
    again = journal_mod.BuildJournal(str(tmp_path), 'h1')
    assert again.taken('a', {}, SELECTION_P, []) is True


def test_the_second_copy_of_a_running_build_is_dropped(runner):  # noqa: F811
    r, conductor, driver, events = runner()
    pool = Pool()
    manager = manager_mod.ComputeManager(r, events, pool=pool)
    _message(manager, 'i')
    _message(manager, 'i')
    _message(manager, 'j')
    # One build of i and one of j queued for the workers.
    assert len(pool.jobs) == 2
    assert r.journal.uuids() == {'i', 'j'}


def test_a_copy_arriving_after_the_build_changes_nothing(runner):  # noqa: F811
    r, conductor, driver, events = runner()
    ctxt = context.get_admin_context()
    r.taken(Instance(uuid='i'), {}, SELECTION_P, [])
    r.build(ctxt, Instance(uuid='i'), {}, SELECTION, [], [])
    assert conductor.state == states.ACTIVE
    calls = list(conductor.calls)
    # The duplicate: taken again (the first is settled), and it finds the
    # instance ACTIVE: no spawn, no destroy, no free, no attempt.
    assert r.taken(Instance(uuid='i'), {}, SELECTION_P, []) is True
    r.build(ctxt, Instance(uuid='i'), {}, SELECTION, [], [])
    assert conductor.state == states.ACTIVE
    assert driver.list_instances() == ['i']
    assert [c for c in conductor.calls[len(calls) :] if c[0] != 'update'] == []
    assert r.journal.uuids() == set()
