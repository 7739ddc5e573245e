"""The cells a resize or cold migrate may choose from, through the real
scheduler (host manager, filters, weighers) and an in-memory placement:
the request spec the super conductor makes (:mod:`nimbus.conductor.
move_cells`) applies CrossCellWeigher to moves, so a host of the
server's own cell wins when hosts of two cells fit; without
``compute:servers:resize:cross_cell`` no host of another cell is ever
chosen or offered as an alternate."""

import pytest

from nimbus.conductor import move_cells
from nimbus.scheduler import driver
from nimbus.scheduler import exception
from nimbus.scheduler import testing
from nimbus.scheduler.host_manager import HostManager
from nimbus.scheduler.host_source import InMemoryHostInfoSource
from tests.unit.scheduler.test_concurrency import SharedPlacement

SOURCE, OTHER = 'cell-1', 'cell-2'


def _scheduler(conf, sizes):
    """Hosts ``host-<i>`` of ``sizes`` ([(cell, vcpus, memory_mb)]), empty;
    the scheduler and its placement."""
    nodes, services = [], []
    for i, (cell, vcpus, memory_mb) in enumerate(sizes):
        node = testing.compute_node(
            i, cell_uuid=cell, vcpus=vcpus, memory_mb=memory_mb, local_gb=100
        )
        node.update(
            vcpus_used=0,
            memory_mb_used=0,
            local_gb_used=0,
            num_io_ops=0,
            failed_builds=0,
        )
        nodes.append(node)
        services.append(
            {
                'host': node['host'],
                'binary': 'nimbus-compute',
                'disabled': False,
                'up': True,
            }
        )
    placement = SharedPlacement(
        {
            n['uuid']: {
                'VCPU': int(n['vcpus'] * n['cpu_allocation_ratio']),
                'MEMORY_MB': n['memory_mb'],
                'DISK_GB': n['local_gb'],
            }
            for n in nodes
        }
    )
    hosts = HostManager(
        conf, InMemoryHostInfoSource(nodes, services, [], {}, [])
    )
    hosts.refresh()
    return driver.Scheduler(conf, placement, hosts)


def _move(vcpus=2, cross_cell=False, source_cell=SOURCE):
    spec = testing.spec(vcpus=vcpus, memory_mb=1024, root_gb=10)
    return move_cells.scope(spec, source_cell, cross_cell)


def _cells(host_list, sizes):
    return [sizes[int(s.service_host.split('-')[1])][0] for s in host_list]


# One small host in the source cell, two big ones (more free RAM: the RAM
# weigher prefers them) in the other.
SIZES = [(SOURCE, 8, 8192), (OTHER, 64, 262144), (OTHER, 64, 262144)]


def test_without_a_source_cell_the_roomier_other_cell_wins(conf):
    """The control: the weighers alone prefer the other cell's hosts."""
    spec = testing.spec(vcpus=2, memory_mb=1024, root_gb=10)
    (host_list,) = _scheduler(conf, SIZES).select_destinations(None, spec)
    assert _cells(host_list[:1], SIZES) == [OTHER]


def test_the_source_cell_wins_when_both_fit_and_the_policy_allows(conf):
    spec = _move(cross_cell=True)
    assert spec.extra['source_cell_uuid'] == SOURCE
    assert 'requested_destination' not in spec.extra
    (host_list,) = _scheduler(conf, SIZES).select_destinations(None, spec)
    assert _cells(host_list, SIZES)[0] == SOURCE


def test_with_the_policy_another_cell_is_chosen_when_only_it_fits(conf):
    spec = _move(vcpus=48, cross_cell=True)  # too big for the source cell
    (host_list,) = _scheduler(conf, SIZES).select_destinations(None, spec)
    assert _cells(host_list[:1], SIZES) == [OTHER]


def test_without_the_policy_a_move_never_leaves_its_cell(conf):
    sizes = SIZES + [(SOURCE, 8, 8192)]
    spec = _move(cross_cell=False)
    assert spec.extra['requested_destination'] == {'cell': SOURCE}
    (host_list,) = _scheduler(conf, sizes).select_destinations(None, spec)
    assert len(host_list) == 2  # both hosts of the source cell, no other
    assert set(_cells(host_list, sizes)) == {SOURCE}
    # Nothing in the source cell fits: no valid host, though the other
    # cell has room.
    with pytest.raises(exception.NoValidHost):
        _scheduler(conf, sizes).select_destinations(None, _move(vcpus=48))


def test_a_chosen_host_keeps_the_cell_limit(conf):
    """migrate --host names a host of another cell: refused too."""
    spec = testing.spec(vcpus=2, memory_mb=1024, root_gb=10)
    spec.extra = {'requested_destination': {'host': 'host-1'}}
    move_cells.scope(spec, SOURCE, cross_cell=False)
    assert spec.extra['requested_destination'] == {
        'host': 'host-1',
        'cell': SOURCE,
    }
    with pytest.raises(exception.NoValidHost):
        _scheduler(conf, SIZES).select_destinations(None, spec)


def test_in_other_cell():
    class Chosen:
        def __init__(self, cell_uuid):
            self.cell_uuid = cell_uuid

    assert move_cells.in_other_cell(Chosen(OTHER), SOURCE)
    assert not move_cells.in_other_cell(Chosen(SOURCE), SOURCE)
    assert not move_cells.in_other_cell(Chosen(None), SOURCE)
