"""Schedule leases on build requests, on a real SQLite API database: one
worker schedules a build request at a time, an expired lease is taken
over (releasing the dead worker's claim), and a worker whose lease was
taken over commits nothing."""

import datetime

import sqlalchemy as sa

from nimbus.common.db import types
from nimbus.conductor import leases
from nimbus.db.api import models

from .conftest import Conductor

NOW = datetime.datetime(2030, 1, 1, 12, 0, 0)


def _build_request(api_db, uuid, age=0, leased_age=None, token=None):
    with api_db.session() as session:
        session.add(
            models.BuildRequest(
                instance_uuid=uuid,
                project_id='p',
                instance={'display_name': uuid},
                created_at=NOW - datetime.timedelta(seconds=age),
                schedule_token=token,
                schedule_started_at=None
                if leased_age is None
                else NOW - datetime.timedelta(seconds=leased_age),
            )
        )


def _exists(api_db, uuid):
    with api_db.session() as session:
        return (
            session.execute(
                sa.select(models.BuildRequest.id).where(
                    models.BuildRequest.instance_uuid == uuid
                )
            ).first()
            is not None
        )


def test_one_lease_at_a_time_until_it_expires(api_db):
    _build_request(api_db, 'free')
    _build_request(api_db, 'held', leased_age=10, token='other')
    _build_request(api_db, 'expired', leased_age=301, token='dead')
    token, taken = leases.take(
        api_db, ['free', 'held', 'expired', 'gone'], 300, now=NOW
    )
    # 'gone' has no build request: nothing to lease, the schedule finds it
    # deleted as it always did.
    assert taken == {'free': None, 'expired': 'dead', 'gone': None}
    again, taken_again = leases.take(api_db, ['free', 'expired'], 300, NOW)
    assert taken_again == {}
    with api_db.session() as session:
        assert leases.holds(session, 'free', token)
        assert not leases.holds(session, 'held', token)
        assert leases.holds(session, 'held', None)


def test_only_the_holder_ends_the_lease(api_db):
    _build_request(api_db, 'i')
    token, _ = leases.take(api_db, ['i'], 300, now=NOW)
    with api_db.session() as session:
        assert not leases.finish(session, 'i', 'somebody-else')
    assert _exists(api_db, 'i')
    with api_db.session() as session:
        assert leases.finish(session, 'i', token)
    assert not _exists(api_db, 'i')


class Placement:
    def __init__(self):
        self.removed = []

    def remove_allocations(self, ctxt, consumer):
        self.removed.append(consumer)


class Scheduler:
    def __init__(self):
        self.asked = []

    def select_destinations(self, ctxt, spec, uuids, alternates):
        self.asked.append(list(uuids))
        return [[{'service_host': 'h1'}] for _ in uuids]

    def update_instance_info(self, ctxt, host, info):
        pass


SPEC = {'request_id': 'req-1', 'min_count': 1, 'flavor': {}}


def test_a_duplicate_cast_does_not_schedule_twice(api_db):
    now = types.utcnow()
    with api_db.session() as session:
        session.add(
            models.BuildRequest(
                instance_uuid='i',
                project_id='p',
                instance={},
                schedule_token='busy',
                schedule_started_at=now,
            )
        )
    scheduler, placement = Scheduler(), Placement()
    conductor = Conductor(api_db, scheduler, placement)
    conductor.schedule_and_build_instances(None, SPEC, ['i'])
    assert scheduler.asked == []
    assert conductor.built == []
    assert placement.removed == []


def test_taking_over_an_expired_lease_releases_the_dead_claim(api_db):
    old = types.utcnow() - datetime.timedelta(seconds=3600)
    with api_db.session() as session:
        session.add(
            models.BuildRequest(
                instance_uuid='i',
                project_id='p',
                instance={},
                schedule_token='dead-worker',
                schedule_started_at=old,
            )
        )
    scheduler, placement = Scheduler(), Placement()
    conductor = Conductor(api_db, scheduler, placement)
    conductor.schedule_and_build_instances(None, SPEC, ['i'])
    # The claim the dead worker may have left goes before the scheduler
    # claims again for the same consumer.
    assert placement.removed == ['i']
    assert scheduler.asked == [['i']]
    assert conductor.built == ['i']


def test_a_late_copy_after_the_instance_reached_its_cell_is_dropped(api_db):
    """The first copy of the cast built the instance (its build request
    ended and its mapping names a cell); the second copy finds the build
    request gone. It must neither schedule nor release anything: the claim
    placement holds is the instance's own."""
    with api_db.session() as session:
        session.add(
            models.CellMapping(
                uuid='c1',
                name='cell1',
                transport_url='inproc:///c1',
                database_connection='sqlite://',
            )
        )
    with api_db.session() as session:
        cell_id = session.execute(sa.select(models.CellMapping.id)).scalar()
        session.add(
            models.InstanceMapping(
                instance_uuid='built', project_id='p', cell_id=cell_id
            )
        )
        session.add(
            models.InstanceMapping(instance_uuid='deleted', project_id='p')
        )
    _token, taken = leases.take(api_db, ['built', 'deleted'], 300, now=NOW)
    # 'deleted' (its user deleted the build request before it had a cell)
    # is scheduled to find it gone, as before.
    assert taken == {'deleted': None}
    scheduler, placement = Scheduler(), Placement()
    conductor = Conductor(api_db, scheduler, placement)
    conductor.schedule_and_build_instances(None, SPEC, ['built'])
    assert scheduler.asked == []
    assert conductor.built == []
    assert placement.removed == []


def _statements(api_db):
    seen = []
    sa.event.listen(
        api_db.engine,
        'before_cursor_execute',
        lambda conn, cursor, statement, *rest: seen.append(
            statement.split()[0].upper()
        ),
    )
    return seen


def test_free_leases_take_one_update_and_one_read(api_db):
    """A boot's lease is an UPDATE of the free ones and one read of every
    lease after it (the read before the UPDATE was one round trip too
    many); a held or expired one still costs its own swap."""
    for uuid in ('a', 'b'):
        _build_request(api_db, uuid)
    seen = _statements(api_db)
    _token, taken = leases.take(api_db, ['a', 'b', 'gone'], 300, now=NOW)
    assert taken == {'a': None, 'b': None, 'gone': None}
    # 'gone' is looked for in the instance mappings (a late copy of the
    # message): a third statement only for a build request not found.
    assert seen[:2] == ['UPDATE', 'SELECT'] and len(seen) == 3
    del seen[:]
    _token, taken = leases.take(api_db, ['a', 'b'], 300, now=NOW)
    assert taken == {}
    assert seen[:2] == ['UPDATE', 'SELECT']
    # The two held ones: a swap each (refused: not expired).
    assert seen.count('UPDATE') == 3 and len(seen) == 4
