"""The agent's report to placement, against a real in-process placement:
one child provider per device under the host's root, idempotent, removal
of vanished devices (refused while allocated), and a compute's resource
tracker leaving the device providers alone."""

import uuid

import pytest

from nimbus.accelerator.agent import placement_report
from nimbus.accelerator.agent import service
from nimbus.accelerator.drivers import base
from nimbus.common import config
from nimbus.common import exception as common_exc
from nimbus.compute import resource_tracker
from nimbus.compute.virt import fake as fake_virt

OWNER = placement_report.OWNER_TRAIT


class Reporter:
    def __init__(self):
        self.reports = []

    def report_devices(self, ctxt, host, devices):
        self.reports.append((host, devices))


def _conf(tmp_path, **groups):
    groups.setdefault('DEFAULT', {})['state_path'] = str(tmp_path)
    return config.build_conf([], overrides=groups)


def _agent(conf, placement, host='cn1', reporter=None):
    return service.AcceleratorAgent(
        conf, host, placement.client, reporter or Reporter()
    )


def _root(placement, host='cn1'):
    root = str(uuid.uuid4())
    placement.add_root(root, host)
    return root


def test_each_device_becomes_a_child_provider_of_the_host(tmp_path, placement):
    root = _root(placement)
    conf = _conf(
        tmp_path,
        fake_fpga={'count': 2},
        fake_gpu={'count': 1, 'num_accelerators': 4},
    )
    reporter = Reporter()
    agent = _agent(conf, placement, reporter=reporter)
    result = agent.report()
    assert result.root == root and len(result.created) == 3
    assert not agent.placement_pending
    # The service got the devices before placement offered them.
    [(host, devices)] = reporter.reports
    assert host == 'cn1' and len(devices) == 3

    tree = placement.tree(root)
    assert set(tree) == {
        'cn1',
        'cn1_fake_fpga_0',
        'cn1_fake_fpga_1',
        'cn1_fake_gpu_0',
    }
    rp_uuids = {
        d['deployables'][0]['name']: d['deployables'][0]['rp_uuid']
        for d in devices
    }
    for name in ('cn1_fake_fpga_0', 'cn1_fake_fpga_1'):
        provider = tree[name]
        assert provider['uuid'] == rp_uuids[name]
        assert provider['parent_provider_uuid'] == root
        assert provider['inventories']['FPGA']['total'] == 1
        assert set(provider['traits']) == {
            OWNER,
            'CUSTOM_FPGA_INTEL',
            'CUSTOM_FPGA_PRODUCT_ID_09C4',
        }
    gpu = tree['cn1_fake_gpu_0']
    assert gpu['inventories'] == {
        'PGPU': {
            'total': 4,
            'reserved': 0,
            'min_unit': 1,
            'max_unit': 4,
            'step_size': 1,
            'allocation_ratio': 1.0,
        }
    }
    assert set(gpu['traits']) == {
        OWNER,
        'CUSTOM_GPU_NVIDIA',
        'CUSTOM_GPU_PRODUCT_ID_1EB8',
    }
    assert gpu['uuid'] == base.provider_uuid('cn1', devices[2]['uuid'])
    # Schedulable: the device answers a request for its class and trait.
    candidates = placement.get(
        '/allocation_candidates',
        resources='VCPU:1',
        resources1='PGPU:1',
        required1='CUSTOM_GPU_PRODUCT_ID_1EB8',
        group_policy='none',
    )
    assert [
        set(c['allocations']) for c in candidates['allocation_requests']
    ] == [{root, gpu['uuid']}]


def test_a_second_report_writes_nothing(tmp_path, placement):
    _root(placement)
    agent = _agent(_conf(tmp_path, fake_fpga={'count': 2}), placement)
    assert agent.report().created
    placement.recorder.calls.clear()
    result = agent.report()
    assert not result.changed and not result.kept
    assert placement.recorder.writes == []
    assert placement.recorder.calls  # it did read placement
    # A new agent of the same host (a restart) finds it all in place.
    placement.recorder.calls.clear()
    assert (
        not _agent(_conf(tmp_path, fake_fpga={'count': 2}), placement)
        .report()
        .changed
    )
    assert placement.recorder.writes == []


def test_a_steady_report_reads_only_the_root_and_the_owned_providers(
    tmp_path, placement
):
    _root(placement)
    agent = _agent(
        _conf(tmp_path, fake_fpga={'count': 4}, fake_gpu={'count': 4}),
        placement,
    )
    assert len(agent.report().created) == 8
    placement.recorder.calls.clear()
    assert not agent.report().changed
    assert placement.recorder.calls == [
        ('GET', '/resource_providers'),
        ('GET', '/resource_providers'),
    ]


def test_a_provider_changed_behind_the_agent_is_put_right(tmp_path, placement):
    root = _root(placement)
    agent = _agent(_conf(tmp_path), placement)
    agent.report()
    gpu = placement.tree(root)['cn1_fake_gpu_0']['uuid']
    placement.client.set_traits(placement.ctxt, gpu, [OWNER])
    placement.client.set_inventory(
        placement.ctxt,
        gpu,
        {
            'PGPU': {
                'total': 9,
                'reserved': 1,
                'min_unit': 1,
                'max_unit': 9,
                'step_size': 1,
                'allocation_ratio': 2.0,
            }
        },
    )
    assert agent.report().updated == [gpu]
    provider = placement.tree(root)['cn1_fake_gpu_0']
    assert set(provider['traits']) == {
        OWNER,
        'CUSTOM_GPU_NVIDIA',
        'CUSTOM_GPU_PRODUCT_ID_1EB8',
    }
    assert provider['inventories']['PGPU']['total'] == 1
    assert provider['inventories']['PGPU']['allocation_ratio'] == 1.0


def test_a_changed_device_is_updated(tmp_path, placement):
    root = _root(placement)
    conf = _conf(tmp_path, fake_gpu={'count': 1})
    agent = _agent(conf, placement)
    agent.report()
    conf.set_override('num_accelerators', 2, group='fake_gpu')
    conf.set_override('product', '1e04', group='fake_gpu')
    result = agent.report()
    gpu = placement.tree(root)['cn1_fake_gpu_0']
    assert result.updated == [gpu['uuid']] and not result.created
    assert gpu['inventories']['PGPU']['total'] == 2
    assert 'CUSTOM_GPU_PRODUCT_ID_1E04' in gpu['traits']
    assert 'CUSTOM_GPU_PRODUCT_ID_1EB8' not in gpu['traits']


def test_providers_of_vanished_devices_are_removed(tmp_path, placement):
    root = _root(placement)
    conf = _conf(tmp_path, fake_fpga={'count': 3})
    agent = _agent(conf, placement)
    agent.report()
    gone = placement.tree(root)['cn1_fake_fpga_2']['uuid']
    conf.set_override('count', 2, group='fake_fpga')
    result = agent.report()
    assert result.removed == [gone]
    assert set(placement.tree(root)) == {
        'cn1',
        'cn1_fake_fpga_0',
        'cn1_fake_fpga_1',
        'cn1_fake_gpu_0',
    }


def test_a_vanished_device_holding_allocations_is_kept(tmp_path, placement):
    root = _root(placement)
    conf = _conf(tmp_path)
    agent = _agent(conf, placement)
    agent.report()
    gpu = placement.tree(root)['cn1_fake_gpu_0']['uuid']
    consumer = str(uuid.uuid4())
    claim = placement.client.claim(
        placement.ctxt,
        consumer,
        {
            'allocations': {
                root: {'resources': {'VCPU': 1}},
                gpu: {'resources': {'PGPU': 1}},
            }
        },
        'project',
        'user',
    )
    assert claim.claimed

    conf.set_override('count', 0, group='fake_gpu')
    result = agent.report()
    assert result.kept == [gpu] and result.removed == []
    assert 'cn1_fake_gpu_0' in placement.tree(root)
    # Still kept on the next report, and nothing rewritten meanwhile.
    placement.recorder.calls.clear()
    assert agent.report().kept == [gpu]
    assert placement.recorder.writes == []
    # Once the consumer is gone, so is the provider.
    placement.client.remove_allocations(placement.ctxt, consumer)
    assert agent.report().removed == [gpu]
    assert 'cn1_fake_gpu_0' not in placement.tree(root)


def test_providers_without_the_ownership_trait_are_left_alone(
    tmp_path, placement
):
    root = _root(placement)
    other = str(uuid.uuid4())
    placement.client.ensure_resource_provider(
        placement.ctxt, other, 'cn1_nic_0', root
    )
    agent = _agent(
        _conf(tmp_path, fake_fpga={'count': 0}, fake_gpu={'count': 0}),
        placement,
    )
    result = agent.report()
    assert not result.changed
    assert set(placement.tree(root)) == {'cn1', 'cn1_nic_0'}


def test_without_the_root_the_report_waits_and_retries(tmp_path, placement):
    conf = _conf(tmp_path)
    reporter = Reporter()
    agent = _agent(conf, placement, host='late', reporter=reporter)
    assert agent.report() is None
    assert agent.placement_pending
    assert len(reporter.reports) == 1  # the service still heard
    assert placement.recorder.writes == []
    assert agent.retry_placement() is None and agent.placement_pending
    root = _root(placement, 'late')
    assert len(agent.retry_placement().created) == 2
    assert not agent.placement_pending
    assert agent.retry_placement() is None  # nothing pending any more
    assert set(placement.tree(root)) == {
        'late',
        'late_fake_fpga_0',
        'late_fake_gpu_0',
    }


class _Boom(base.AcceleratorDriver):
    device_type = 'GPU'
    resource_class = 'PGPU'

    def discover(self):
        raise RuntimeError('bus error')

    def program(self, device, attach_handle, arq):
        pass


def test_a_failing_discovery_skips_the_report_and_removes_nothing(
    tmp_path, placement
):
    root = _root(placement)
    conf = _conf(tmp_path)
    agent = _agent(conf, placement)
    agent.report()
    before = placement.tree(root)
    agent.drivers = [agent.drivers[0], ('boom', _Boom(conf, 'cn1'))]
    placement.recorder.calls.clear()
    assert agent.report() is None
    assert placement.recorder.calls == []
    assert set(placement.tree(root)) == set(before)


def test_the_compute_resource_tracker_leaves_device_providers_alone(
    tmp_path, placement
):
    conf = _conf(tmp_path, fake_driver={'pgpus': 1})
    node = resource_tracker.compute_node_uuid('cn1')
    tracker = resource_tracker.ResourceTracker(
        conf,
        'cn1',
        fake_virt.FakeDriver(conf, 'cn1'),
        placement.client,
        cell_conductor=None,
    )
    tracker.update(placement.ctxt, startup=True)
    agent = _agent(conf, placement)
    agent.report()
    tree = placement.tree(node)
    devices = {name: p for name, p in tree.items() if OWNER in p['traits']}
    assert set(devices) == {'cn1_fake_fpga_0', 'cn1_fake_gpu_0'}
    # The tracker's periodic update rewrites nothing of the agent's.
    placement.recorder.calls.clear()
    tracker.update(placement.ctxt)
    written = {path for method, path in placement.recorder.writes}
    assert not any(
        p['uuid'] in path for p in devices.values() for path in written
    )
    after = placement.tree(node)
    for name, provider in devices.items():
        assert after[name]['generation'] == provider['generation']
        assert after[name]['inventories'] == provider['inventories']
    # And the agent finds nothing to redo after the tracker's update.
    placement.recorder.calls.clear()
    assert not agent.report().changed
    assert placement.recorder.writes == []


def test_a_trait_deleted_behind_the_shared_client_is_created_again(placement):
    """The client creates each custom trait once; when one is deleted
    behind its back, the trait write refused for it (400) makes the next
    call create it again."""
    client, ctxt = placement.client, placement.ctxt
    first, second = _root(placement, 'a'), _root(placement, 'b')
    client.set_traits(ctxt, first, {'CUSTOM_X'})
    client.set_traits(ctxt, first, set())
    placement.recorder.calls.clear()
    assert (
        client.request(ctxt, 'DELETE', '/traits/CUSTOM_X').status_code == 204
    )
    with pytest.raises(common_exc.PlacementError):
        client.set_traits(ctxt, second, {'CUSTOM_X'})
    client.set_traits(ctxt, second, {'CUSTOM_X'})
    assert placement.recorder.calls.count(('PUT', '/traits/CUSTOM_X')) == 1
    assert set(placement.tree(second)['b']['traits']) == {'CUSTOM_X'}
