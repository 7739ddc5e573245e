"""The batched heartbeat of simulated computes (nimbus.compute.simulated):
who is in the batch, and one call per host when ``[upgrade_levels]
conductor`` caps the version below the batch (RPC 1.3)."""

import types

import oslo_messaging as messaging
import pytest

from nimbus.common import config
from nimbus.compute import simulated


class Host:
    def __init__(self, name, sent):
        self.name = name
        self.alive = True
        self._sent = sent

    def heartbeat(self):
        self._sent.append(self.name)


class Conductor:
    def __init__(self, error=None, batches=True):
        self.error = error
        self.batches = []
        self._batches = batches

    def takes_heartbeat_batches(self):
        return self._batches

    def service_heartbeats(self, ctxt, binary, hosts, timeout=None):
        if self.error is not None:
            raise self.error
        self.batches.append((binary, list(hosts), timeout))
        return {'refreshed': len(hosts), 'created': 0}


def _computes(conductor, names):
    computes = simulated.SimulatedComputes.__new__(simulated.SimulatedComputes)
    computes.conf = config.build_conf(
        [], overrides={'DEFAULT': {'report_interval': 7}}
    )
    computes.conductor = conductor
    single = []
    computes.group = types.SimpleNamespace(
        hosts={name: Host(name, single) for name in names}
    )
    return computes, single


def test_one_call_carries_every_running_host():
    conductor = Conductor()
    computes, single = _computes(conductor, ['h-0002', 'h-0001', 'h-0003'])
    computes.group.hosts['h-0003'].alive = False  # stopped itself
    assert computes.heartbeat() == ['h-0001', 'h-0002']
    assert conductor.batches == [('nimbus-compute', ['h-0001', 'h-0002'], 7)]
    assert single == []


def test_no_hosts_no_call():
    conductor = Conductor()
    computes, _single = _computes(conductor, [])
    assert computes.heartbeat() == []
    assert conductor.batches == []


def test_capped_below_the_batch_one_call_per_host():
    conductor = Conductor(batches=False)
    computes, single = _computes(conductor, ['h-0001', 'h-0002'])
    computes.heartbeat()
    assert single == ['h-0001', 'h-0002']
    assert conductor.batches == []


def test_a_lost_reply_waits_for_the_next_batch():
    conductor = Conductor(messaging.MessagingTimeout('no reply'))
    computes, single = _computes(conductor, ['h-0001'])
    assert computes.heartbeat() == ['h-0001']
    assert single == []


def test_other_errors_reach_the_ticker():
    conductor = Conductor(messaging.RemoteError('OperationalError', 'db'))
    computes, _single = _computes(conductor, ['h-0001'])
    with pytest.raises(messaging.RemoteError):
        computes.heartbeat()
