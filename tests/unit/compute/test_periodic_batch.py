"""The periodic resource update of a slice of simulated hosts in two
calls (issue 27): one ``instances_on_hosts`` read (cell conductor RPC
1.15) before the slice, one ``compute_nodes_update`` (1.14) after it; the
fall-backs for an older conductor or a failed batch."""

import threading
from unittest import mock

from nimbus.common.objects import Instance
from nimbus.compute import service as service_mod
from nimbus.compute import simulated
from nimbus.messaging_internals import simulated as group_mod


class _NoTicker:
    def add(self, *args, **kwargs):
        return None


def test_a_wheel_finishes_each_slice_after_its_calls():
    seen = []

    def finish(hosts):
        seen.append(('finish', hosts))
        raise RuntimeError('the batched write failed')  # logged only

    wheel = group_mod.Wheel(
        _NoTicker(),
        60,
        'update',
        slots=2,
        prepare=lambda hosts: seen.append(('prepare', hosts)),
        finish=finish,
    )
    for index in range(4):
        wheel.add('h%d' % index, lambda index=index: seen.append(index))
    assert wheel.tick() == ['h0', 'h2']
    assert seen == [('prepare', ['h0', 'h2']), 0, 2, ('finish', ['h0', 'h2'])]
    assert wheel.tick() == ['h1', 'h3']  # the failed finish stopped nothing


def _record(host):
    return {'uuid': 'node-' + host, 'host': host}


class _Tracker:
    def __init__(self, host):
        self.host = host
        self.delivered_records = []
        self.sent_alone = []

    def delivered(self, record):
        self.delivered_records.append(record)

    def send(self, ctxt, record):
        self.sent_alone.append(record)


class _Host:
    """A simulated host as the group sees it: its update leaves its node
    record in the batch it was given."""

    def __init__(self, name):
        self.tracker = _Tracker(name)
        self.known = None
        self.batch = None
        self.quiet = False

    def expect_instances(self, instances, node_batch=None):
        self.known, self.batch = list(instances), node_batch

    def expect_quiet(self):
        self.quiet = True

    def update(self):
        if self.batch is not None:
            self.batch.append((self.tracker, _record(self.tracker.host)))


def _computes(conductor, names):
    computes = simulated.SimulatedComputes.__new__(simulated.SimulatedComputes)
    computes.conductor = conductor
    computes._slice = threading.local()
    computes.group = mock.Mock()
    computes.group.hosts = {name: _Host(name) for name in names}
    return computes


def _conductor(cap=None):
    def allowed(version):
        return cap is None or tuple(map(int, version.split('.'))) <= cap

    conductor = mock.Mock()
    conductor.takes_host_instance_batches.side_effect = lambda: allowed('1.15')
    conductor.takes_node_batches.side_effect = lambda: allowed('1.14')
    conductor.takes_host_record_checks.side_effect = lambda: allowed('1.13')
    return conductor


def _slice(computes, names):
    quiet = computes.before_updates(names)
    for name in names:
        computes.group.hosts[name].update()
    return quiet, computes.after_updates(names)


NAMES = ['h1', 'h2', 'h3']


def test_one_read_before_and_one_write_after_the_slice():
    conductor = _conductor()
    busy = Instance(uuid='i1', host='h2', vm_state='active')
    conductor.instances_on_hosts.return_value = {
        'h1': [],
        'h2': [busy],
        'h3': [],
    }
    computes = _computes(conductor, NAMES)
    quiet, sent = _slice(computes, NAMES)
    assert quiet == set(NAMES) and sent == 3
    conductor.instances_on_hosts.assert_called_once_with(mock.ANY, NAMES)
    assert computes.group.hosts['h2'].known == [busy]
    assert computes.group.hosts['h1'].known == []
    conductor.hosts_with_records.assert_not_called()
    (call,) = conductor.compute_nodes_update.call_args_list
    assert [n.host for n in call.args[1]] == NAMES
    for name in NAMES:
        tracker = computes.group.hosts[name].tracker
        assert tracker.delivered_records == [_record(name)]
        assert tracker.sent_alone == []
    conductor.compute_node_update.assert_not_called()
    # Nothing left behind for the next slice.
    assert computes.after_updates(NAMES) == 0


def test_a_conductor_capped_below_1_15_gets_the_per_host_calls():
    conductor = _conductor(cap=(1, 14))
    conductor.hosts_with_records.return_value = ['h2']
    computes = _computes(conductor, NAMES)
    quiet, sent = _slice(computes, NAMES)
    conductor.instances_on_hosts.assert_not_called()
    assert quiet == {'h1', 'h3'} and sent == 0
    assert [n for n, h in computes.group.hosts.items() if h.quiet] == [
        'h1',
        'h3',
    ]
    # No batch given: each host's update sends its own record.
    assert all(h.batch is None for h in computes.group.hosts.values())
    conductor.compute_nodes_update.assert_not_called()


def test_a_conductor_capped_below_1_14_reads_in_one_call_sends_alone():
    conductor = _conductor(cap=(1, 13))
    assert not conductor.takes_host_instance_batches()
    computes = _computes(conductor, NAMES)
    conductor.takes_host_instance_batches.side_effect = None
    conductor.takes_host_instance_batches.return_value = True
    conductor.instances_on_hosts.return_value = {n: [] for n in NAMES}
    _slice(computes, NAMES)
    assert all(h.batch is None for h in computes.group.hosts.values())
    conductor.compute_nodes_update.assert_not_called()


def test_a_failed_read_falls_back_and_a_failed_write_sends_one_by_one():
    conductor = _conductor()
    conductor.instances_on_hosts.side_effect = RuntimeError('away')
    conductor.hosts_with_records.return_value = []
    computes = _computes(conductor, NAMES)
    quiet, _sent = _slice(computes, NAMES)
    assert quiet == set(NAMES)  # the older check still spared the reads
    assert all(h.known is None for h in computes.group.hosts.values())

    conductor.instances_on_hosts.side_effect = None
    conductor.instances_on_hosts.return_value = {n: [] for n in NAMES}
    conductor.compute_nodes_update.side_effect = RuntimeError('away')
    _quiet, sent = _slice(computes, NAMES)
    assert sent == 0
    for name in NAMES:
        tracker = computes.group.hosts[name].tracker
        assert tracker.sent_alone == [_record(name)]


def _service(guests, read=()):
    svc = service_mod.ComputeService.__new__(service_mod.ComputeService)
    svc.host = 'h1'
    svc.conductor = mock.Mock()
    svc.conductor.instances_on_host.return_value = list(read)
    return svc


def test_a_host_takes_the_slice_read_only_when_it_covers_every_guest():
    mine = Instance(uuid='i1', host='h1', vm_state='active')
    fresh = [mine, Instance(uuid='i2', host='h1', vm_state='building')]
    svc = _service(['i1'], fresh)
    # Every guest is a live instance the read named: no call.
    assert svc._instances(None, {'i1'}, [mine], False) == [mine]
    assert svc._instances(None, set(), [mine], False) == [mine]
    svc.conductor.instances_on_host.assert_not_called()
    # A guest the read did not name (a build that landed since): the
    # cell is read, so no guest is taken for an orphan.
    assert svc._instances(None, {'i1', 'i2'}, [mine], False) == fresh
    deleted = Instance(uuid='i1', host='h1', vm_state='deleted')
    assert svc._instances(None, {'i1'}, [deleted], False) == fresh
    # Without a slice read: the quiet check, else the host's own read.
    assert svc._instances(None, set(), None, True) == []
    assert svc._instances(None, set(), None, False) == fresh
    assert svc.conductor.instances_on_host.call_count == 3
