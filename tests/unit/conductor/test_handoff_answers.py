"""The hand-off to cells answers the super conductor, which acts on the
answer: a failed one-at-a-time hand-off buries the instance in cell0 with
its claim released; a batch whose preparation fails goes one at a time.

A real SQLite API database; the scheduler, placement and the hand-off are
recording fakes."""

from .conftest import Conductor
from .test_super_conductor_claims import SELECTED
from .test_super_conductor_claims import SPEC
from .test_super_conductor_claims import FakePlacement
from .test_super_conductor_claims import ScriptedScheduler
from .test_super_conductor_claims import _spec


class FailingHandoff:
    """A hand-off whose batch preparation fails and whose one-at-a-time
    path fails for the uuids in ``broken``."""

    def __init__(self, broken=()):
        self.broken = set(broken)
        self.one, self.sent = [], []

    def build_one(self, ctxt, uuid, request_spec, host_list, lease=None):
        self.one.append((uuid, host_list[0].service_host))
        if uuid in self.broken:
            raise RuntimeError('cell database down for %s' % uuid)

    def prepare_many(self, ctxt, request_spec, placed, lease):
        raise RuntimeError('batch insert failed')

    def send_many(self, ctxt, request_spec, ready):
        self.sent.extend(ready)


def _conductor(api_db, steps, handoff):
    placement = FakePlacement()
    cond = Conductor(api_db, ScriptedScheduler(api_db, steps), placement)
    cond.handoff = handoff
    return cond, placement


def test_a_failed_hand_off_buries_the_instance_and_frees_its_claim(api_db):
    handoff = FailingHandoff(broken={'u1'})
    cond, placement = _conductor(api_db, [(('u1',), (), [SELECTED])], handoff)
    spec = dict(SPEC, num_instances=1, instance_uuids=['u1'])
    cond.schedule_and_build_instances(None, _spec(spec), ['u1'])
    assert handoff.one == [('u1', 'host-1')]
    assert placement.removed == ['u1']
    assert cond.buried == [
        ('u1', 'Build failed.', 'cell database down for u1')
    ]


def test_a_failed_batch_goes_one_at_a_time(api_db):
    handoff = FailingHandoff(broken={'u2'})
    cond, placement = _conductor(
        api_db, [(('u1', 'u2'), (), [SELECTED, SELECTED])], handoff
    )
    cond.schedule_and_build_instances(None, _spec(SPEC), ['u1', 'u2'])
    assert handoff.sent == []
    assert handoff.one == [('u1', 'host-1'), ('u2', 'host-1')]
    assert placement.removed == ['u2']
    assert [b[:2] for b in cond.buried] == [('u2', 'Build failed.')]
