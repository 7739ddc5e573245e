"""The cell conductor's build check, on a real SQLite cell database with a
recording placement."""

import datetime

import pytest
import sqlalchemy as sa

from nimbus.common import config
from nimbus.common import context
from nimbus.common import db as common_db
from nimbus.common import instance_states as states
from nimbus.conductor import build_check
from nimbus.db import cell_instances as instances
from nimbus import db as nimbus_db
from nimbus.db.cell import models

NOW = datetime.datetime(2030, 1, 1, 12, 0, 0)


class FakePlacement:
    def __init__(self):
        self.removed = []
        self.down = False

    def remove_allocations(self, ctxt, consumer):
        if self.down:
            raise ConnectionError('placement is down')
        self.removed.append(consumer)


@pytest.fixture
def cell(tmp_path):
    url = 'sqlite:///%s' % (tmp_path / 'cell.sqlite')
    nimbus_db.sync_cell(url)
    db = common_db.get_database(url)

    def make(timeout=0, stall=0, started=None, reschedule=None):
        conf = config.build_conf(
            [],
            overrides={
                'DEFAULT': {'service_down_time': 60},
                'conductor': {
                    'instance_build_timeout': timeout,
                    'build_stall_timeout': stall,
                },
            },
        )
        placement = FakePlacement()
        check = build_check.BuildCheck(
            conf, db, placement, reschedule=reschedule, started=started
        )
        return check, placement

    yield db, make
    common_db.dispose_all()


def _service(db, host, seen_ago, forced_down=False):
    with db.session() as session:
        session.add(
            models.Service(
                uuid='svc-' + host,
                host=host,
                binary='nimbus-compute',
                forced_down=forced_down,
                last_seen_up=NOW - datetime.timedelta(seconds=seen_ago),
            )
        )


def _instance(db, uuid, host, vm_state=states.BUILDING, age=10):
    with db.session() as session:
        row = instances.create(
            session,
            {
                'uuid': uuid,
                'project_id': 'p',
                'host': host,
                'node': host,
                'vm_state': vm_state,
                'flavor': {'vcpus': 1},
            },
        )
        row.created_at = NOW - datetime.timedelta(seconds=age)
        row.updated_at = row.created_at


def _row(db, uuid):
    with db.session() as session:
        row = instances.get(session, uuid)
        fault = session.execute(
            sa.select(models.InstanceFault).where(
                models.InstanceFault.instance_uuid == uuid
            )
        ).scalar()
        return (
            row.vm_state,
            row.host,
            fault.message if fault else None,
            fault.details if fault else None,
        )


def test_a_build_on_a_down_compute_goes_to_error_and_is_freed(cell):
    db, make = cell
    check, placement = make()
    _service(db, 'up', seen_ago=5)
    _service(db, 'down', seen_ago=61)
    _service(db, 'forced', seen_ago=1, forced_down=True)
    _instance(db, 'on-up', 'up')
    _instance(db, 'on-down', 'down')
    _instance(db, 'on-forced', 'forced')
    _instance(db, 'on-unknown', 'ghost')
    _instance(db, 'active-on-down', 'down', vm_state=states.ACTIVE)
    failed = check.run(context.get_admin_context(), now=NOW)
    assert sorted(failed) == ['on-down', 'on-forced', 'on-unknown']
    assert sorted(placement.removed) == sorted(failed)
    state, host, message, details = _row(db, 'on-down')
    assert (state, host) == (states.ERROR, None)
    assert message == 'Build interrupted: compute down is down'
    assert details == (
        'Build interrupted: nimbus-compute on down down '
        'since 2030-01-01 11:58:59'
    )
    assert 'forced down' in _row(db, 'on-forced')[3]
    assert 'no service record' in _row(db, 'on-unknown')[3]
    assert _row(db, 'on-up')[0] == states.BUILDING
    assert _row(db, 'active-on-down')[0] == states.ACTIVE
    with db.session() as session:
        assert instances.attempts(session, 'on-down') == [
            {
                'host': 'down',
                'node': 'down',
                'result': 'failed',
                'reason': details,
            }
        ]
    # The next pass has nothing left to do.
    assert check.run(context.get_admin_context(), now=NOW) == {}


def test_the_build_timeout_fails_slow_builds_on_live_computes(cell):
    db, make = cell
    check, placement = make(timeout=300)
    _service(db, 'up', seen_ago=5)
    _instance(db, 'young', 'up', age=299)
    _instance(db, 'old', 'up', age=301)
    assert list(check.run(context.get_admin_context(), now=NOW)) == ['old']
    assert _row(db, 'old')[2] == 'Build timed out'
    assert _row(db, 'young')[0] == states.BUILDING
    # Without a timeout a slow build on a live compute is left alone.
    _instance(db, 'ancient', 'up', age=10**6)
    unlimited, _ = make(timeout=0)
    assert unlimited.run(context.get_admin_context(), now=NOW) == {}


def test_the_compare_and_swap_loses_to_a_compute_that_moved_first(cell):
    db, make = cell
    check, placement = make()
    _service(db, 'down', seen_ago=600)
    _instance(db, 'i', 'down')
    # The instance was rescheduled to another host between the read and
    # the write: the host no longer matches.
    with db.session() as session:
        assert not instances.fail_build(session, 'i', 'elsewhere', 'm', 'd')
        instances.transition(
            session, 'i', [states.BUILDING], {'vm_state': states.ACTIVE}
        )
    assert check.run(context.get_admin_context(), now=NOW) == {}
    assert placement.removed == []
    assert _row(db, 'i')[:3] == (states.ACTIVE, 'down', None)


def test_an_allocation_placement_refused_to_free_is_retried(cell):
    db, make = cell
    check, placement = make()
    _service(db, 'down', seen_ago=600)
    _instance(db, 'i', 'down')
    placement.down = True
    assert list(check.run(context.get_admin_context(), now=NOW)) == ['i']
    assert placement.removed == []
    placement.down = False
    check.run(context.get_admin_context(), now=NOW)
    assert placement.removed == ['i']
    check.run(context.get_admin_context(), now=NOW)
    assert placement.removed == ['i']


def test_a_restarted_conductor_waits_before_calling_a_compute_down(cell):
    db, make = cell
    # Started 30 s ago: the heartbeats of the minute before were sent
    # while it was down, and are missing for that reason alone.
    check, placement = make(started=NOW - datetime.timedelta(seconds=30))
    _service(db, 'quiet', seen_ago=90)
    _service(db, 'forced', seen_ago=1, forced_down=True)
    _instance(db, 'on-quiet', 'quiet')
    _instance(db, 'on-forced', 'forced')
    assert list(check.run(context.get_admin_context(), now=NOW)) == [
        'on-forced'
    ]
    assert _row(db, 'on-quiet')[0] == states.BUILDING
    # A full service_down_time after its start, silence means down.
    later = NOW + datetime.timedelta(seconds=31)
    assert list(check.run(context.get_admin_context(), now=later)) == [
        'on-quiet'
    ]


def _stored_alternates(db, uuid, host_list):
    with db.session() as session:
        instances.transition(
            session,
            uuid,
            [states.BUILDING],
            {
                'build_alternates': {
                    'request_spec': {'project_id': 'p', 'flavor': {}},
                    'host_list': host_list,
                }
            },
        )
        row = instances.get(session, uuid)
        row.updated_at = row.created_at


def test_a_stalled_build_moves_to_its_alternate_or_fails(cell):
    db, make = cell
    moved = []

    def reschedule(
        ctxt, uuid, spec, host_list, failed_host, reason, taken=False
    ):
        moved.append((uuid, [s.service_host for s in host_list]))
        # Taken off its host before its allocation was freed: a late
        # BUILD -> ACTIVE of the compute on 'up' fails from now on.
        assert taken and failed_host == 'up'
        assert _row(db, uuid)[1] is None
        assert placement.removed == [uuid]
        with db.session() as session:
            assert (
                instances.transition(
                    session,
                    uuid,
                    [states.BUILDING],
                    {'vm_state': states.ACTIVE},
                    expected_host='up',
                )
                is None
            )

    check, placement = make(stall=300, reschedule=reschedule)
    _service(db, 'up', seen_ago=5)
    _instance(db, 'stalled', 'up', age=301)
    _stored_alternates(db, 'stalled', [{'service_host': 'alt'}])
    _instance(db, 'stalled-alone', 'up', age=301)
    _instance(db, 'young', 'up', age=299)
    _instance(db, 'spawning', 'up', age=10**5)
    with db.session() as session:
        instances.transition(
            session,
            'spawning',
            [states.BUILDING],
            {'task_state': states.SPAWNING},
        )
        row = instances.get(session, 'spawning')
        row.updated_at = row.created_at
    failed = check.run(context.get_admin_context(), now=NOW)
    assert moved == [('stalled', ['alt'])]
    assert list(failed) == ['stalled-alone']
    assert _row(db, 'stalled-alone')[2] == 'Build stalled: up never started it'
    assert sorted(placement.removed) == ['stalled', 'stalled-alone']
    # A spawning build is its compute's (instance_build_timeout covers a
    # slow one); a young one waits.
    assert _row(db, 'spawning')[0] == states.BUILDING
    assert _row(db, 'young')[0] == states.BUILDING
    with db.session() as session:
        assert instances.attempts(session, 'stalled')[0]['result'] == (
            'failed'
        )


def test_a_build_left_on_no_host_is_failed_after_the_stall_timeout(cell):
    """A build taken off its host for a reschedule whose conductor died
    before it reached an alternate."""
    db, make = cell
    check, placement = make(stall=300, reschedule=lambda *a, **k: None)
    _instance(db, 'lost', None, age=301)
    _instance(db, 'moving', None, age=10)
    failed = check.run(context.get_admin_context(), now=NOW)
    assert list(failed) == ['lost']
    assert _row(db, 'lost')[0] == states.ERROR
    assert _row(db, 'lost')[2] == 'Build lost during its reschedule'
    assert placement.removed == ['lost']
    assert _row(db, 'moving')[0] == states.BUILDING
