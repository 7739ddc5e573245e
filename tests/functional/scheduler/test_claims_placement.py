"""Claims against the real placement (in process): a consumer that already holds
allocations makes placement answer a consumer generation conflict; that instance of a
multi-create fails with the reason while the others land."""

import pytest

from nimbus.common import config
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
    other = {"allocations": {nodes[0]["uuid"]: {"resources": {"VCPU": 2}}}}
    assert placement.client.claim_resources(placement.ctxt, taken, other, "p", "u")

    out = sched.select_destinations(placement.ctxt, sp)

    assert [bool(r) for r in out] == [True, False, True]
    for uuid, selections in zip(sp.instance_uuids, out):
        if uuid == taken:
            continue
        allocs = placement.allocations(uuid)["allocations"]
        assert list(allocs) == [selections[0]["compute_node_uuid"]]
        assert allocs[selections[0]["compute_node_uuid"]]["resources"] == {
            "VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1}
    # The other consumer's allocations are untouched.
    held = placement.allocations(taken)
    assert held["allocations"][nodes[0]["uuid"]]["resources"] == {"VCPU": 2}
    assert held["consumer_generation"] == 1
    # The failed instance has its own record with the reason.
    (failed,) = [r for r in records if r[0] == "failed"]
    assert failed[1] == [taken]
    assert "consumer generation conflict" in failed[2]["message"]
    assert failed[2]["failed_instances"][0]["instance_uuid"] == taken
    (scheduled,) = [r for r in records if r[0] == "scheduled"]
    assert sorted(scheduled[1]) == sorted([sp.instance_uuids[0], sp.instance_uuids[2]])


def test_capacity_refusal_from_real_placement_moves_on(placement):
    """The host's capacity went to someone else between GET /allocation_candidates and
    the claim: placement refuses (a 409 without the concurrent_update code), the claim
    is not re-sent, and the next host is claimed."""
    conf = config.build_conf([])
    for name in ("cpu", "ram", "disk", "hypervisor_version", "io_ops", "build_failure",
                 "num_instances"):
        conf.set_override(f"{name}_weight_multiplier", 0.0, "filter_scheduler")
    nodes = ip.compute_hosts(placement, 2, vcpus=4)
    sched = ip.scheduler(conf, placement, nodes)
    sp = testing.spec(vcpus=3, memory_mb=512, root_gb=1, num=1)
    client = placement.client
    real_candidates, real_claim = client.get_allocation_candidates, client.claim
    stolen, outcomes = [], []

    def candidates_then_steal(ctxt, params):
        body = real_candidates(ctxt, params)
        # Every weight ties, so the first candidate is picked: take its room now.
        first = next(iter(body["allocation_requests"][0]["allocations"]))
        stolen.append(first)
        r = placement.session.put(
            "/allocations/aaaaaaaa-0000-0000-0000-000000000001",
            headers={"openstack-api-version": "placement 1.39"},
            json={"allocations": {first: {"resources": {"VCPU": 2}}},
                  "project_id": "p", "user_id": "u", "consumer_generation": None,
                  "consumer_type": "INSTANCE"})
        assert r.status_code == 204, r.text
        return body

    def recording_claim(*args, **kwargs):
        out = real_claim(*args, **kwargs)
        outcomes.append((next(iter(args[2]["allocations"])), out.status, out.attempts))
        return out
    client.get_allocation_candidates = candidates_then_steal
    client.claim = recording_claim

    out = sched.select_destinations(placement.ctxt, sp)

    other = [cn["uuid"] for cn in nodes if cn["uuid"] != stolen[0]][0]
    assert outcomes == [(stolen[0], "refused", 1), (other, "claimed", 1)]
    assert out[0][0]["compute_node_uuid"] == other
    assert placement.usages(other)["VCPU"] == 3
    assert placement.usages(stolen[0])["VCPU"] == 2
