"""The binder: programs devices through the agent, settles ARQs by
compare-and-swap, sends accelerator-request-bound events only after that
commit, retries undelivered events, and resumes after a restart (a new
binder on the same database)."""

import datetime
import time

import pytest

from nimbus.accelerator import binder as binder_mod
from nimbus.accelerator import states
from nimbus.accelerator.objects import arq as arq_obj
from nimbus.accelerator.objects import base
from nimbus.accelerator.objects import device as device_obj
from tests.unit.accelerator import helpers

HOST = 'compute1'
OTHER_INSTANCE = '0b0c0d0e-0000-4000-8000-00000000abcd'
INSTANCE = '6a9d8e39-3d1f-4d5c-9a55-1f4b3c2d1e0f'


class ProgrammingFailed(Exception):
    """Named as the agent's RPC error."""


class FakeAgent:
    """The agent's RPC API: records programs and releases; ``fail`` makes
    program raise; ``during_program`` runs inside program."""

    def __init__(self, fail=None, during_program=None):
        self.programmed, self.released = [], []
        self.fail = fail
        self.during_program = during_program

    def program(self, ctxt, host, arq):
        if self.during_program:
            self.during_program(arq)
        if self.fail:
            raise ProgrammingFailed(self.fail)
        self.programmed.append((host, arq))
        return {'programmed': True}

    def release(self, ctxt, host, arq):
        self.released.append((host, arq))


class FakeEvents:
    """nimbus-api's answers in order (True delivered / False retry); each
    send also records what state the ARQ had in the database then."""

    def __init__(self, adb, answers=()):
        self.adb = adb
        self.answers = list(answers)
        self.sent = []

    def send(self, arq_uuid, server_uuid, status):
        committed = arq_obj.get(self.adb, arq_uuid)['state']
        self.sent.append((arq_uuid, server_uuid, status, committed))
        if self.answers:
            ok = self.answers.pop(0)
            return ok, 'delivered' if ok else 'nimbus-api answered 422'
        return True, 'delivered'


class Clock:
    def __init__(self):
        self.now = base.utcnow()

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += datetime.timedelta(seconds=seconds)


@pytest.fixture
def adb(tmp_path):
    adb = helpers.new_db(tmp_path)
    device_obj.report(adb, HOST, [helpers.fpga(HOST, 0, handles=1)])
    return adb


def _rp(adb):
    return device_obj.list_deployables(adb)[0]['rp_uuid']


def _bind_one(adb, rp_uuid=None, instance=INSTANCE):
    profile = {'name': 'fpga', 'groups': [{'resources:FPGA': '1'}]}
    arq = arq_obj.create_for_profile(adb, profile, 'p1')[0]
    arq_obj.start_binds(
        adb,
        {
            arq['uuid']: {
                'hostname': HOST,
                'device_rp_uuid': rp_uuid or _rp(adb),
                'instance_uuid': instance,
            }
        },
    )
    return arq['uuid']


def _binder(adb, agent, events, clock=None):
    return binder_mod.Binder(
        adb,
        agent,
        events,
        retry_initial=5,
        retry_max=40,
        clock=clock or Clock(),
    )


def test_bind_success_programs_binds_then_sends_completed(adb):
    uuid = _bind_one(adb)
    agent, events = FakeAgent(), FakeEvents(adb)
    _binder(adb, agent, events).run_once()
    arq = arq_obj.get(adb, uuid)
    assert arq['state'] == states.BOUND
    handle = list(device_obj.handles_of_host(adb, HOST).values())[0]
    assert handle['in_use'] and handle['arq_uuid'] == uuid
    assert arq['attach_handle_uuid'] == handle['uuid']
    assert arq['attach_handle_type'] == 'PCI'
    host, programmed = agent.programmed[0]
    assert host == HOST and programmed['uuid'] == uuid
    assert programmed['attach_handle']['uuid'] == handle['uuid']
    # The event went out after Bound was committed, and is done with.
    assert events.sent == [(uuid, INSTANCE, 'completed', states.BOUND)]
    assert arq['event_pending'] is False


def test_agent_failure_fails_the_bind_and_sends_failed(adb):
    uuid = _bind_one(adb)
    events = FakeEvents(adb)
    _binder(adb, FakeAgent(fail='bitstream rejected'), events).run_once()
    arq = arq_obj.get(adb, uuid)
    assert arq['state'] == states.BIND_FAILED
    assert 'ProgrammingFailed: bitstream rejected' in arq['failure_reason']
    assert events.sent == [(uuid, INSTANCE, 'failed', states.BIND_FAILED)]
    handle = list(device_obj.handles_of_host(adb, HOST).values())[0]
    assert not handle['in_use'] and handle['arq_uuid'] is None


def test_no_free_handle_fails_the_bind(adb):
    first = _bind_one(adb)
    second = _bind_one(adb, instance=OTHER_INSTANCE)
    events = FakeEvents(adb)
    _binder(adb, FakeAgent(), events).run_once()
    assert arq_obj.get(adb, first)['state'] == states.BOUND
    failed = arq_obj.get(adb, second)
    assert failed['state'] == states.BIND_FAILED
    assert 'no free attach handle' in failed['failure_reason']
    assert (
        second,
        OTHER_INSTANCE,
        'failed',
        states.BIND_FAILED,
    ) in events.sent


def test_a_bind_to_an_unknown_provider_is_refused(adb):
    with pytest.raises(arq_obj.UnknownProvider):
        _bind_one(adb, rp_uuid='00000000-0000-4000-8000-00000000dead')


def test_a_provider_gone_before_programming_fails_the_bind(adb):
    uuid = _bind_one(adb)
    device_obj.report(adb, HOST, [])  # the host stopped reporting it
    agent = FakeAgent()
    _binder(adb, agent, FakeEvents(adb)).run_once()
    assert arq_obj.get(adb, uuid)['state'] == states.BIND_FAILED
    assert agent.programmed == []


def test_event_refused_with_422_is_retried_with_backoff(adb):
    uuid = _bind_one(adb)
    clock = Clock()
    events = FakeEvents(adb, answers=[False, False, True])
    binder = _binder(adb, FakeAgent(), events, clock)
    binder.run_once()
    arq = arq_obj.get(adb, uuid)
    assert arq['state'] == states.BOUND
    assert arq['event_pending'] is True and arq['event_attempts'] == 1
    # Not due yet: nothing is sent.
    binder.run_once()
    assert len(events.sent) == 1
    clock.advance(5)
    binder.run_once()
    assert len(events.sent) == 2
    arq = arq_obj.get(adb, uuid)
    assert arq['event_pending'] is True and arq['event_attempts'] == 2
    clock.advance(5)
    binder.run_once()
    assert len(events.sent) == 2  # the second wait doubled to 10 s
    clock.advance(5)
    binder.run_once()
    assert len(events.sent) == 3
    assert arq_obj.get(adb, uuid)['event_pending'] is False


def test_restart_resumes_pending_binds(tmp_path, adb):
    uuid = _bind_one(adb)
    # The process that recorded the bind died before binding: a new binder
    # on a new connection to the same database finds it.
    fresh = base.AcceleratorDB(adb.database.url)
    agent, events = FakeAgent(), FakeEvents(fresh)
    _binder(fresh, agent, events).run_once()
    assert arq_obj.get(fresh, uuid)['state'] == states.BOUND
    assert [a['uuid'] for _h, a in agent.programmed] == [uuid]
    assert events.sent[0][:3] == (uuid, INSTANCE, 'completed')


def test_restart_resumes_a_bind_that_had_claimed_its_handle(adb):
    uuid = _bind_one(adb)
    arq = arq_obj.get(adb, uuid)
    held = arq_obj.claim_handle(adb, arq)  # then the process died
    agent = FakeAgent()
    _binder(adb, agent, FakeEvents(adb)).run_once()
    assert arq_obj.get(adb, uuid)['state'] == states.BOUND
    assert agent.programmed[0][1]['attach_handle']['uuid'] == held['uuid']


def test_restart_resends_pending_events(adb):
    uuid = _bind_one(adb)
    clock = Clock()
    _binder(
        adb, FakeAgent(), FakeEvents(adb, answers=[False]), clock
    ).run_once()
    assert arq_obj.get(adb, uuid)['event_pending'] is True
    fresh = base.AcceleratorDB(adb.database.url)
    events = FakeEvents(fresh)
    clock.advance(60)
    _binder(fresh, FakeAgent(), events, clock).run_once()
    assert events.sent == [(uuid, INSTANCE, 'completed', states.BOUND)]
    assert arq_obj.get(fresh, uuid)['event_pending'] is False


def test_no_compute_endpoint_keeps_events_pending(adb):
    uuid = _bind_one(adb)
    _binder(adb, FakeAgent(), None).run_once()
    arq = arq_obj.get(adb, uuid)
    assert arq['state'] == states.BOUND and arq['event_pending'] is True


def test_unbind_while_programming_releases_the_device(adb):
    uuid = _bind_one(adb)
    agent = FakeAgent(
        during_program=lambda arq: arq_obj.unbind(adb, [arq['uuid']])
    )
    events = FakeEvents(adb)
    _binder(adb, agent, events).run_once()
    arq = arq_obj.get(adb, uuid)
    assert arq['state'] == states.UNBOUND
    assert [a['uuid'] for _h, a in agent.released] == [uuid]
    handle = list(device_obj.handles_of_host(adb, HOST).values())[0]
    assert not handle['in_use']
    assert events.sent == []


def test_delete_while_programming_releases_the_device(adb):
    uuid = _bind_one(adb)
    agent = FakeAgent(
        during_program=lambda arq: arq_obj.delete(adb, uuids=[arq['uuid']])
    )
    _binder(adb, agent, FakeEvents(adb)).run_once()
    with pytest.raises(arq_obj.NotFound):
        arq_obj.get(adb, uuid)
    assert [a['uuid'] for _h, a in agent.released] == [uuid]
    handle = list(device_obj.handles_of_host(adb, HOST).values())[0]
    assert not handle['in_use']


def test_two_binders_on_one_bind_leave_it_bound(adb):
    # Two service processes pick the same BindStarted ARQ: the second one
    # settles it while the first is still programming.
    uuid = _bind_one(adb)
    other = _binder(adb, FakeAgent(), FakeEvents(adb))
    first_agent = FakeAgent(during_program=lambda arq: other.run_once())
    _binder(adb, first_agent, FakeEvents(adb)).run_once()
    arq = arq_obj.get(adb, uuid)
    assert arq['state'] == states.BOUND
    handle = list(device_obj.handles_of_host(adb, HOST).values())[0]
    assert handle['in_use'] and handle['arq_uuid'] == uuid
    assert first_agent.released == []


def test_unbind_drops_the_pending_event(adb):
    uuid = _bind_one(adb)
    clock = Clock()
    binder = _binder(adb, FakeAgent(), FakeEvents(adb, answers=[False]), clock)
    binder.run_once()
    releases = arq_obj.unbind(adb, [uuid])
    assert releases[0]['host'] == HOST
    arq = arq_obj.get(adb, uuid)
    assert arq['state'] == states.UNBOUND and arq['event_pending'] is False
    clock.advance(120)
    assert arq_obj.due_events(adb, clock()) == []


def test_the_worker_thread_binds_when_woken(adb):
    uuid = _bind_one(adb)
    events = FakeEvents(adb)
    binder = binder_mod.Binder(adb, FakeAgent(), events, poll_interval=0.05)
    binder.start()
    try:
        binder.wake()
        for _ in range(400):
            if events.sent:
                break
            time.sleep(0.025)
    finally:
        binder.stop()
    assert arq_obj.get(adb, uuid)['state'] == states.BOUND
    assert events.sent[0][:3] == (uuid, INSTANCE, 'completed')
