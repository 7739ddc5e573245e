"""nimbus.conductor.move_claims with a real in-process placement and the
real scheduler driver: the spec a move reuses, the claims a move holds,
and what undo and confirm leave behind."""

import uuid

import pytest

from nimbus.common.objects import Flavor
from nimbus.conductor import move_claims
from nimbus.scheduler import exception as sched_exc
from nimbus.scheduler import testing
from tests.functional.scheduler.inproc_placement import RealPlacement


@pytest.fixture
def placement(tmp_path):
    real = RealPlacement(tmp_path)
    yield real
    real.close()


class _Scheduler:
    """The scheduler's answer from placement's candidates: the first
    candidate not ignored and on the requested destination, claimed for
    the instance (the real driver's filtering is tested elsewhere; this
    checks what the spec asks of it)."""

    def __init__(self, placement, hosts):
        self.placement = placement
        self.hosts = hosts  # rp uuid -> host name
        self.specs = []

    def select_destinations(self, ctxt, spec, instance_uuids, alternates):
        self.specs.append(spec)
        dest = (spec.extra or {}).get('requested_destination') or {}
        resources = {
            'VCPU': spec.flavor.vcpus,
            'MEMORY_MB': spec.flavor.memory_mb,
        }
        for rp, name in sorted(self.hosts.items(), key=lambda kv: kv[1]):
            if name in spec.ignore_hosts:
                continue
            if dest.get('host') and dest['host'] != name:
                continue
            try:
                self.placement.client.replace_allocations(
                    ctxt, instance_uuids[0], {rp: resources}, 'p', 'u'
                )
            except Exception:
                continue
            return [[name]]
        raise sched_exc.NoValidHost(reason='no host fits')


def _setup(placement):
    hosts = {}
    for name in ('host-a', 'host-b'):
        rp = str(uuid.uuid4())
        placement.provider(rp, name, {'VCPU': 4, 'MEMORY_MB': 2048})
        hosts[rp] = name
    by_name = {v: k for k, v in hosts.items()}
    instance = str(uuid.uuid4())
    placement.client.replace_allocations(
        placement.ctxt,
        instance,
        {by_name['host-a']: {'VCPU': 1, 'MEMORY_MB': 512}},
        'p',
        'u',
    )
    return hosts, by_name, instance


def _held(placement, consumer):
    got = placement.client.get_allocations_for_consumer(
        placement.ctxt, consumer
    )
    return {
        rp: a['resources'] for rp, a in (got.get('allocations') or {}).items()
    }


def test_move_spec_reuses_the_stored_spec():
    spec = testing.spec(vcpus=1, memory_mb=512)
    spec.instance_uuids = ['a', 'b']
    spec.num_instances = 2
    spec.force_hosts = ['forced']
    spec.availability_zone = 'az1'
    big = Flavor(name='big', flavorid='2', vcpus=2, memory_mb=1024)
    moved = move_claims.move_spec(
        spec,
        'a',
        flavor=big,
        ignore_hosts=['src', 'src'],
        destination={'host': 'dst'},
    )
    assert moved.instance_uuids == ['a']
    assert (moved.num_instances, moved.min_count) == (1, 1)
    assert moved.flavor.name == 'big' and spec.flavor.vcpus == 1
    assert moved.ignore_hosts == ['src'] and moved.force_hosts == []
    assert moved.extra['requested_destination'] == {
        'host': 'dst',
        'node': None,
    }
    assert moved.availability_zone == 'az1'
    again = move_claims.move_spec(moved, 'a', availability_zone='az2')
    assert 'requested_destination' not in again.extra
    assert again.availability_zone == 'az2'


def test_schedule_then_confirm_leaves_only_the_destination(placement):
    hosts, by_name, instance = _setup(placement)
    claims = move_claims.MoveClaims(
        _Scheduler(placement, hosts), placement.client
    )
    migration = str(uuid.uuid4())
    spec = move_claims.move_spec(
        testing.spec(vcpus=2, memory_mb=1024),
        instance,
        ignore_hosts=['host-a'],
    )
    assert claims.schedule(placement.ctxt, spec, instance, migration) == [
        'host-b'
    ]
    assert _held(placement, migration) == {
        by_name['host-a']: {'VCPU': 1, 'MEMORY_MB': 512}
    }
    assert _held(placement, instance) == {
        by_name['host-b']: {'VCPU': 2, 'MEMORY_MB': 1024}
    }
    claims.confirm(placement.ctxt, migration)
    claims.confirm(placement.ctxt, migration)  # idempotent
    assert _held(placement, migration) == {}
    assert list(_held(placement, instance)) == [by_name['host-b']]


def test_undo_and_a_failed_schedule_give_the_source_back(placement):
    hosts, by_name, instance = _setup(placement)
    claims = move_claims.MoveClaims(
        _Scheduler(placement, hosts), placement.client
    )
    source = {by_name['host-a']: {'VCPU': 1, 'MEMORY_MB': 512}}
    migration = str(uuid.uuid4())
    spec = move_claims.move_spec(
        testing.spec(vcpus=1, memory_mb=512), instance, ignore_hosts=['host-a']
    )
    claims.schedule(placement.ctxt, spec, instance, migration)
    claims.undo(placement.ctxt, instance, migration)
    claims.undo(placement.ctxt, instance, migration)  # idempotent
    assert _held(placement, instance) == source
    assert _held(placement, migration) == {}

    # Nothing fits (the only other host is ignored too): the scheduler's
    # NoValidHost reaches the caller and the source is the instance's.
    other = str(uuid.uuid4())
    spec = move_claims.move_spec(
        testing.spec(vcpus=1, memory_mb=512),
        instance,
        ignore_hosts=['host-a', 'host-b'],
    )
    with pytest.raises(sched_exc.NoValidHost):
        claims.schedule(placement.ctxt, spec, instance, other)
    assert _held(placement, instance) == source
    assert _held(placement, other) == {}
