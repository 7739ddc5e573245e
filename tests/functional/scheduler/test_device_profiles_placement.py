"""Device-profile groups through select_destinations against the real placement (in
process): the accelerator request filter names them device_profile_0 and
device_profile_1, placement maps each to the child provider that has its resource and
traits, and the claim holds exactly that."""

import uuid as uuid_mod

import pytest

from nimbus.common import config
from nimbus.scheduler import testing
from tests.functional.scheduler import inproc_placement as ip


@pytest.fixture
def placement(tmp_path):
    p = ip.RealPlacement(tmp_path)
    yield p
    p.close()


def _child(placement, cn, name, inventory, traits):
    uuid = str(
        uuid_mod.uuid5(uuid_mod.NAMESPACE_URL, '%s/%s' % (cn['host'], name))
    )
    placement.client.ensure_traits(placement.ctxt, traits)
    placement.provider(
        uuid,
        '%s-%s' % (cn['host'], name),
        inventory,
        parent=cn['uuid'],
        traits=traits,
    )
    return uuid


def test_two_device_profile_groups_map_to_child_providers(placement):
    conf = config.build_conf([])
    nodes = ip.compute_hosts(placement, 3)
    for node in nodes:  # computes that can attach accelerators
        placement.client.update_traits(
            placement.ctxt, node['uuid'], add=['COMPUTE_ACCELERATORS']
        )
    children = {}
    # host-0: a T4 GPU and an Intel FPGA; host-1: the GPU is of another kind;
    # host-2: a T4 GPU but no FPGA. Only host-0 satisfies both groups.
    children['gpu0'] = _child(
        placement, nodes[0], 'gpu', {'CUSTOM_PGPU': 2}, ['CUSTOM_GPU_T4']
    )
    children['fpga0'] = _child(
        placement, nodes[0], 'fpga', {'CUSTOM_FPGA': 1}, ['CUSTOM_FPGA_INTEL']
    )
    children['gpu1'] = _child(
        placement, nodes[1], 'gpu', {'CUSTOM_PGPU': 2}, ['CUSTOM_GPU_A100']
    )
    children['fpga1'] = _child(
        placement, nodes[1], 'fpga', {'CUSTOM_FPGA': 1}, ['CUSTOM_FPGA_INTEL']
    )
    children['gpu2'] = _child(
        placement, nodes[2], 'gpu', {'CUSTOM_PGPU': 2}, ['CUSTOM_GPU_T4']
    )
    queries = []
    # The scheduler asks for placement's compact answer.
    real = placement.client.get_compact_candidates

    def recording(ctxt, params):
        queries.append(list(params))
        return real(ctxt, params)

    placement.client.get_compact_candidates = recording
    sched = ip.scheduler(conf, placement, nodes)
    sp = testing.spec(
        vcpus=1,
        memory_mb=512,
        root_gb=1,
        num=1,
        device_profile='dp1',
        requested_resources=[
            {
                'resources': {'CUSTOM_PGPU': 1},
                'required_traits': ['CUSTOM_GPU_T4'],
            },
            {
                'resources': {'CUSTOM_FPGA': 1},
                'required_traits': ['CUSTOM_FPGA_INTEL'],
            },
        ],
    )

    out = sched.select_destinations(placement.ctxt, sp)

    assert ('resources_device_profile_0', 'CUSTOM_PGPU:1') in queries[0]
    assert ('required_device_profile_0', 'CUSTOM_GPU_T4') in queries[0]
    assert ('resources_device_profile_1', 'CUSTOM_FPGA:1') in queries[0]
    (selection,) = [s for s in out[0][:1]]
    assert selection.service_host == 'host-0'
    assert len(out[0]) == 1  # no other host can serve both groups
    areq = selection.allocation_request
    assert areq['mappings'] == {
        '': [nodes[0]['uuid']],
        '_device_profile_0': [children['gpu0']],
        '_device_profile_1': [children['fpga0']],
    }
    assert areq['allocations'][children['gpu0']]['resources'] == {
        'CUSTOM_PGPU': 1
    }
    assert areq['allocations'][children['fpga0']]['resources'] == {
        'CUSTOM_FPGA': 1
    }
    held = placement.allocations(sp.instance_uuids[0])['allocations']
    assert held[children['gpu0']]['resources'] == {'CUSTOM_PGPU': 1}
    assert held[children['fpga0']]['resources'] == {'CUSTOM_FPGA': 1}
    assert set(held) == {nodes[0]['uuid'], children['gpu0'], children['fpga0']}
