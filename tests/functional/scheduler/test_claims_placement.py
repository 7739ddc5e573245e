"""Claims against the real placement (in process): a consumer that already holds
allocations makes placement answer a consumer generation conflict; that instance of a
multi-create fails with the reason while the others land."""

import uuid as uuid_mod

import pytest

from nimbus.common import config
from nimbus.common.clients import compact_candidates
from nimbus.scheduler import testing
from tests.functional.scheduler import inproc_placement as ip


@pytest.fixture
def placement(tmp_path):
    p = ip.RealPlacement(tmp_path)
    yield p
    p.close()


def test_consumer_generation_conflict_fails_only_that_instance(placement):
    conf = config.build_conf([])
    nodes = ip.compute_hosts(placement, 3)
    records = []
    sched = ip.scheduler(conf, placement, nodes, records)
    sp = testing.spec(vcpus=1, memory_mb=512, root_gb=1, num=3, min_count=1)
    taken = sp.instance_uuids[1]
    # Someone else already wrote this consumer's allocations (generation 1).
    other = {'allocations': {nodes[0]['uuid']: {'resources': {'VCPU': 2}}}}
    assert placement.client.claim_resources(
        placement.ctxt, taken, other, 'p', 'u'
    )

    out = sched.select_destinations(placement.ctxt, sp)

    assert [bool(r) for r in out] == [True, False, True]
    for uuid, selections in zip(sp.instance_uuids, out, strict=False):
        if uuid == taken:
            continue
        allocs = placement.allocations(uuid)['allocations']
        assert list(allocs) == [selections[0].compute_node_uuid]
        assert allocs[selections[0].compute_node_uuid]['resources'] == {
            'VCPU': 1,
            'MEMORY_MB': 512,
            'DISK_GB': 1,
        }
    # The other consumer's allocations are untouched.
    held = placement.allocations(taken)
    assert held['allocations'][nodes[0]['uuid']]['resources'] == {'VCPU': 2}
    assert held['consumer_generation'] == 1
    # The failed instance has its own record with the reason.
    (failed,) = [r for r in records if r[0] == 'failed']
    assert failed[1] == [taken]
    assert 'consumer generation conflict' in failed[2]['message']
    assert failed[2]['failed_instances'][0]['instance_uuid'] == taken
    (scheduled,) = [r for r in records if r[0] == 'scheduled']
    assert sorted(scheduled[1]) == sorted(
        [sp.instance_uuids[0], sp.instance_uuids[2]]
    )


def test_capacity_refusal_from_real_placement_moves_on(placement):
    """The host's capacity went to someone else between GET /allocation_candidates and
    the claim: placement refuses (a 409 without the concurrent_update code), the claim
    is not re-sent, and the next host is claimed."""
    conf = config.build_conf([])
    for name in (
        'cpu',
        'ram',
        'disk',
        'hypervisor_version',
        'io_ops',
        'build_failure',
        'num_instances',
    ):
        conf.set_override(f'{name}_weight_multiplier', 0.0, 'filter_scheduler')
    nodes = ip.compute_hosts(placement, 2, vcpus=4)
    sched = ip.scheduler(conf, placement, nodes)
    sp = testing.spec(vcpus=3, memory_mb=512, root_gb=1, num=1)
    client = placement.client
    # The scheduler asks for placement's compact answer.
    real_candidates, real_claim = (client.get_compact_candidates, client.claim)
    stolen, outcomes = [], []

    def candidates_then_steal(ctxt, params):
        body = real_candidates(ctxt, params)
        # Every weight ties, so the first candidate is picked: take its room now.
        request = compact_candidates.full_requests(body)[0]
        first = next(iter(request['allocations']))
        stolen.append(first)
        r = placement.session.put(
            '/allocations/aaaaaaaa-0000-0000-0000-000000000001',
            headers={'openstack-api-version': 'placement 1.39'},
            json={
                'allocations': {first: {'resources': {'VCPU': 2}}},
                'project_id': 'p',
                'user_id': 'u',
                'consumer_generation': None,
                'consumer_type': 'INSTANCE',
            },
        )
        assert r.status_code == 204, r.text
        return body

    def recording_claim(*args, **kwargs):
        out = real_claim(*args, **kwargs)
        outcomes.append(
            (next(iter(args[2]['allocations'])), out.status, out.attempts)
        )
        return out

    client.get_compact_candidates = candidates_then_steal
    client.claim = recording_claim

    out = sched.select_destinations(placement.ctxt, sp)

    other = [cn['uuid'] for cn in nodes if cn['uuid'] != stolen[0]][0]
    assert outcomes == [(stolen[0], 'refused', 1), (other, 'claimed', 1)]
    assert out[0][0].compute_node_uuid == other
    assert placement.usages(other)['VCPU'] == 3
    assert placement.usages(stolen[0])['VCPU'] == 2


def test_pgpu_on_child_providers_multi_create(placement):
    """Three instances of CUSTOM_PGPU:1 on hosts with two one-GPU child providers each:
    the second instance on a host takes its other GPU, nobody's alternate is a host
    whose GPUs this request took, and every claim holds in placement."""
    conf = config.build_conf([])
    for name in ('cpu', 'disk', 'io_ops'):
        conf.set_override(f'{name}_weight_multiplier', 0.0, 'filter_scheduler')
    nodes = ip.compute_hosts(placement, 3, vcpus=8)
    # host-0 has the most free RAM, then host-1, then host-2
    for cn, used in zip(nodes, (0, 2048, 4096), strict=False):
        cn['memory_mb'] = 8192 - used
        placement.client.set_inventory(
            placement.ctxt,
            cn['uuid'],
            {
                rc: dict(ip.RC_DEFAULTS, total=total, max_unit=total)
                for rc, total in (
                    ('VCPU', 8),
                    ('MEMORY_MB', 8192 - used),
                    ('DISK_GB', 100),
                )
            },
        )
    gpus = {}
    for cn in nodes:
        for g in range(2):
            child = str(
                uuid_mod.uuid5(
                    uuid_mod.NAMESPACE_URL, '%s/gpu%d' % (cn['host'], g)
                )
            )
            placement.provider(
                child,
                '%s-gpu%d' % (cn['host'], g),
                {'CUSTOM_PGPU': 1},
                parent=cn['uuid'],
            )
            gpus[child] = cn['host']
    records = []
    sched = ip.scheduler(conf, placement, nodes, records)
    sp = testing.spec(
        vcpus=1,
        memory_mb=512,
        root_gb=1,
        num=3,
        extra_specs={'resources:CUSTOM_PGPU': '1'},
    )

    out = sched.select_destinations(placement.ctxt, sp)

    chosen = [r[0].service_host for r in out]
    assert chosen == ['host-0', 'host-0', 'host-1']
    taken = []
    for uuid, selections in zip(sp.instance_uuids, out, strict=False):
        allocs = placement.allocations(uuid)['allocations']
        (gpu,) = [rp for rp in allocs if rp in gpus]
        assert allocs[gpu]['resources'] == {'CUSTOM_PGPU': 1}
        assert gpus[gpu] == selections[0].service_host
        assert gpu in selections[0].allocation_request['allocations']
        taken.append(gpu)
    assert len(set(taken)) == 3
    for gpu in gpus:
        assert placement.usages(gpu).get('CUSTOM_PGPU', 0) <= 1
    # host-0's GPUs went to this request: the third instance's alternates skip it
    assert [s.service_host for s in out[2][1:]] == ['host-2']
    assert [s.service_host for s in out[1][1:]] == ['host-1', 'host-2']
    # an alternate never names a GPU this request had taken by then
    for k, selections in enumerate(out):
        for alt in selections[1:]:
            (gpu,) = [
                rp
                for rp in alt.allocation_request['allocations']
                if rp in gpus
            ]
            assert gpu not in taken[: k + 1]
