"""A move's request spec is the one stored at the server's create: its
server group lists the members of that moment. The scheduler adds the
members the group gained since (its cache of the groups knows them), with
their hosts, as Nova's conductor reads the group again before a move:
an anti-affinity member never lands beside one booted after it."""

from nimbus.common import context as ctx_mod
from nimbus.conductor import move_claims
from nimbus.scheduler import driver, exception, testing
from nimbus.scheduler.host_manager import HostManager

import pytest


class Placement:
    """Every host fits; claims hold."""

    def __init__(self, hm, spec):
        self.hm, self.spec = hm, spec

    def get_allocation_candidates(self, ctxt, params):
        return testing.candidates_for(self.hm.all_host_states(), self.spec)

    def claim(self, ctxt, consumer, areq, project_id, user_id):
        from nimbus.common.clients import placement as pc

        return pc.ClaimOutcome(pc.CLAIMED)

    def remove_allocations(self, ctxt, consumer):
        pass


def _cloud(conf, hosts, placed):
    """``placed``: {instance: host index}; one anti-affinity group g of
    them all, in the scheduler's cache."""
    source = testing.make_source(hosts, seed=1)
    for uuid, index in placed.items():
        source._instances.setdefault('host-%d' % index, []).append(
            {'uuid': uuid}
        )
    source._groups.append(
        {
            'uuid': 'g',
            'name': 'g',
            'policy': 'anti-affinity',
            'rules': {},
            'members': list(placed),
        }
    )
    hm = HostManager(conf, source)
    hm.refresh()
    return hm


def _stored(members):
    """The spec stored at the create of the group's first member."""
    return testing.spec(
        vcpus=1,
        memory_mb=512,
        root_gb=1,
        instance_group={
            'uuid': 'g',
            'name': 'g',
            'policy': 'anti-affinity',
            'rules': {},
            'members': list(members),
            'hosts': [],
        },
        scheduler_hints={'group': 'g'},
    )


def test_a_member_booted_later_keeps_a_move_off_its_host(conf):
    hm = _cloud(conf, 3, {'a': 0, 'b': 1})
    spec = move_claims.move_spec(_stored(['a']), 'a', ignore_hosts=['host-0'])
    sched = driver.Scheduler(conf, Placement(hm, spec), hm)
    ctxt = ctx_mod.get_admin_context()

    answer = sched.dry_run(ctxt, spec)
    assert [r['host'] for r in answer['ranked']] == ['host-2']
    assert {r['host']: r['filter'] for r in answer['rejected']} == {
        'host-0': 'IgnoreHosts',
        'host-1': 'ServerGroupAntiAffinityFilter',
    }
    spec = move_claims.move_spec(_stored(['a']), 'a', ignore_hosts=['host-0'])
    ((selected, *_alternates),) = sched.select_destinations(ctxt, spec)
    assert selected.service_host == 'host-2'


def test_no_host_left_for_a_move_is_no_valid_host(conf):
    hm = _cloud(conf, 2, {'a': 0, 'b': 1})
    spec = move_claims.move_spec(_stored(['a']), 'a', ignore_hosts=['host-0'])
    sched = driver.Scheduler(conf, Placement(hm, spec), hm)
    with pytest.raises(exception.NoValidHost):
        sched.select_destinations(ctx_mod.get_admin_context(), spec)


def test_the_group_of_a_build_is_unchanged_when_the_cache_adds_nothing(conf):
    hm = _cloud(conf, 3, {'a': 0})
    spec = _stored(['a', 'new'])
    spec.instance_group.hosts = ['host-0']
    sched = driver.Scheduler(conf, Placement(hm, spec), hm)
    sched._resolve_group(spec)
    assert spec.instance_group.members == ['a', 'new']
    assert spec.instance_group.hosts == ['host-0']
