"""The compute reports its driver's free-form stats with its node record
(``[fake_driver] stats`` for the fake driver), and the cell conductor's
endpoint refuses stats that are not an object of strings."""

import pytest

from nimbus.common import config
from nimbus.common import rpc
from nimbus.compute import resource_tracker
from nimbus.compute.virt import fake
from nimbus.conductor import manager as conductor_manager


class RecordingConductor:
    def __init__(self):
        self.nodes = []

    def compute_node_update(self, ctxt, node):
        # As the rpcapi puts it on the wire.
        node = node.to_primitive()
        self.nodes.append(node)
        return {'uuid': node['uuid']}


def _tracker(tmp_path, config_text=None, **fake_driver):
    args = []
    if config_text is not None:
        path = tmp_path / 'nimbus.conf'
        path.write_text(config_text)
        args = ['--config-file', str(path)]
    conf = config.build_conf(
        args,
        overrides={
            'DEFAULT': {'state_path': str(tmp_path)},
            'fake_driver': fake_driver,
        },
    )
    conductor = RecordingConductor()
    return resource_tracker.ResourceTracker(
        conf, 'h1', fake.FakeDriver(conf, 'h1'), None, conductor
    ), conductor


def test_the_fake_drivers_stats_reach_the_node_report(tmp_path):
    # The option as an operator writes it in a config file.
    tracker, conductor = _tracker(
        tmp_path, '[fake_driver]\nstats = rack:r1,gpu_vendor:acme\n'
    )
    tracker.report_node(None)
    (node,) = conductor.nodes
    assert node['stats'] == {'rack': 'r1', 'gpu_vendor': 'acme'}
    assert node['uuid'] == resource_tracker.compute_node_uuid('h1')


def test_no_stats_by_default(tmp_path):
    tracker, _conductor = _tracker(tmp_path)
    assert tracker.node_record()['stats'] == {}


class _Driver(fake.FakeDriver):
    def node_facts(self):
        return dict(super().node_facts(), stats={'cores': 8})


def test_a_drivers_stats_are_reported_as_strings(tmp_path):
    conf = config.build_conf(
        [], overrides={'DEFAULT': {'state_path': str(tmp_path)}}
    )
    tracker = resource_tracker.ResourceTracker(
        conf, 'h1', _Driver(conf, 'h1'), None, RecordingConductor()
    )
    assert tracker.node_record()['stats'] == {'cores': '8'}


class _CellConductor:
    def __init__(self):
        self.nodes = []

    def compute_node_update(self, ctxt, node):
        # The ComputeNodeRecord the endpoint converted, as a dict again.
        self.nodes.append(node.to_primitive())
        return node


@pytest.mark.parametrize(
    'stats', [['rack', 'r1'], {'rack': 1}, {'rack': None}, 'rack:r1']
)
def test_the_conductor_refuses_malformed_stats(stats):
    cell = _CellConductor()
    endpoint = conductor_manager.CellConductorManager(cell)
    # A refused call answers InvalidMessage.
    with pytest.raises(rpc.InvalidMessage, match='stats'):
        endpoint.compute_node_update(
            None, node={'uuid': 'u', 'host': 'h', 'stats': stats}
        )
    assert cell.nodes == []
    endpoint.compute_node_update(
        None, node={'uuid': 'u', 'host': 'h', 'stats': {'rack': 'r1'}}
    )
    assert cell.nodes[0]['stats'] == {'rack': 'r1'}
