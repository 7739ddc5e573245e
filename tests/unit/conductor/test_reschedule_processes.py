"""Two cell conductor processes get the same reschedule at the same
moment: exactly one walks the alternates.

Each process builds its own conductor on one SQLite cell database and
shares nothing else with the other. Their placement claims wait for each
other at a barrier: a copy that reaches its claim holds there until the
other copy reaches its own (or the barrier gives up), so a check that
only reads the row before claiming would let both through. The
compare-and-swap that takes the build off the failed host lets one."""

import multiprocessing
import threading

import pytest

from nimbus.common import context
from nimbus.common import db as common_db
from nimbus.common import instance_states as states
from nimbus.common.clients import placement as placement_client
from nimbus.conductor import cell_conductor
from nimbus import db as nimbus_db
from nimbus.db import cell_instances as instances

from .test_cell_conductor import FakeComputeAPI
from .test_cell_conductor import _selection
from .test_cell_conductor import _spec

FORK = multiprocessing.get_context('fork')


class MeetingPlacement:
    """Claims wait at ``barrier`` for the other process's claim (at most
    ``patience`` seconds) and then hold; each claim is reported on
    ``claims``."""

    def __init__(self, barrier, claims, patience):
        self.barrier = barrier
        self.claims = claims
        self.patience = patience

    def claim(
        self, ctxt, consumer, areq, project, user, consumer_generation=None
    ):
        try:
            self.barrier.wait(self.patience)
        except threading.BrokenBarrierError:
            pass  # the other copy never claims: the expected outcome
        self.claims.put((consumer, areq['host']))
        return placement_client.ClaimOutcome(placement_client.CLAIMED)

    def remove_allocations(self, ctxt, consumer):
        self.claims.put(('removed', consumer))


def _one_copy(url, start, barrier, claims, builds):
    db = common_db.get_database(url)
    compute = FakeComputeAPI()
    conductor = cell_conductor.CellConductor(
        None, db, MeetingPlacement(barrier, claims, 5), compute
    )
    start.wait(30)
    conductor.build_instances(
        context.get_admin_context(),
        'i-1',
        _spec({'project_id': 'p', 'user_id': 'u'}),
        [_selection('h2'), _selection('h3')],
        'h0',
        'disk on fire',
    )
    builds.put(len(compute.builds))
    db.dispose()


def _drain(queue):
    out = []
    while not queue.empty():
        out.append(queue.get())
    return out


@pytest.mark.slow
@pytest.mark.skipif(
    'fork' not in multiprocessing.get_all_start_methods(), reason='needs fork'
)
def test_two_processes_with_the_same_reschedule_claim_once(tmp_path):
    url = 'sqlite:///%s' % (tmp_path / 'cell.sqlite')
    nimbus_db.sync_cell(url)
    db = common_db.get_database(url)
    with db.session() as session:
        instances.create(
            session,
            {
                'uuid': 'i-1',
                'project_id': 'p',
                'user_id': 'u',
                'host': 'h0',
                'node': 'h0',
                'vm_state': states.BUILDING,
                'flavor': {'vcpus': 1},
            },
        )
    common_db.dispose_all()

    start, barrier = FORK.Barrier(2), FORK.Barrier(2)
    claims, builds = FORK.Queue(), FORK.Queue()
    copies = [
        FORK.Process(
            target=_one_copy, args=(url, start, barrier, claims, builds)
        )
        for _ in range(2)
    ]
    for copy in copies:
        copy.start()
    for copy in copies:
        copy.join(60)
        assert copy.exitcode == 0

    assert _drain(claims) == [('i-1', 'h2')]
    assert sorted(_drain(builds)) == [0, 1]
    db = common_db.get_database(url)
    with db.session() as session:
        row = instances.get(session, 'i-1')
        assert (row.vm_state, row.host) == (states.BUILDING, 'h2')
    common_db.dispose_all()
