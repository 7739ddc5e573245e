"""The decision stream: one notification per decision, on the in-process
bus (the embedded transport) and, when reachable, on RabbitMQ."""

import queue

from oslo_config import cfg
import oslo_messaging as messaging
import pytest

from nimbus.common import context
from nimbus.messaging_internals import inproc
from nimbus.common.rpc import options as rpc_options
from nimbus.scheduler import conf as sconf
from nimbus.scheduler import driver as driver_mod
from nimbus.scheduler import exception
from nimbus.scheduler import notifications
from nimbus.scheduler import testing
from nimbus.testing import infra


class Placement:
    """Placement over the host manager's states: candidates and claims in
    memory (testing.candidates_for and InMemoryClaims)."""

    def __init__(self, hm):
        self.hm = hm
        self.claims = testing.InMemoryClaims()

    def get_allocation_candidates(self, ctxt, params):
        return testing.candidates_for(self.hm.all_host_states(), self.spec)

    def claim_resources(self, ctxt, uuid, areq, project_id, user_id):
        return True

    def remove_allocations(self, ctxt, uuid):
        pass


def _bus_conf():
    """The messaging options as the daemons register them: on RabbitMQ a
    durable ``nimbus`` exchange and durable queues, which ``nimbus
    decisions`` declares alike."""
    conf = cfg.ConfigOpts()
    rpc_options.register_opts(conf)
    conf([], project='nimbus', default_config_files=[])
    return conf


def _scheduler(conf, url, n=20):
    hm = testing.manager_with(n, conf)
    placement = Placement(hm)
    transport = messaging.get_notification_transport(_bus_conf(), url=url)
    notifier = notifications.make_notifier(transport, 'sched-1')
    return (
        driver_mod.Scheduler(conf, placement, hm, notifier=notifier),
        placement,
        transport,
    )


def _tail(transport, **filters):
    got = queue.Queue()
    listener = notifications.listen(transport, got.put, **filters)
    return got, listener


def _run(url):
    conf = sconf.make_conf()
    sched, placement, transport = _scheduler(conf, url)
    got, listener = _tail(transport)
    try:
        spec = testing.spec(num=2, flavor_name='m1.small')
        placement.spec = spec
        ctxt = context.get_admin_context()
        result = sched.select_destinations(ctxt, spec)
        payload = got.get(timeout=10)
        assert payload['nimbus_object.version'] == '1.0'
        assert payload['request_id'] == ctxt.request_id
        assert payload['outcome'] == 'scheduled'
        assert payload['flavor']['name'] == 'm1.small'
        assert payload['placement_candidates'] > 0
        assert payload['filters'], 'filter counts are reported'
        assert [i['host'] for i in payload['instances']] == [
            r[0].service_host for r in result
        ]
        first = payload['instances'][0]
        assert isinstance(first['weight'], float)
        assert [a['host'] for a in first['alternates']] == [
            s.service_host for s in result[0][1:]
        ]
        assert all(isinstance(a['weight'], float) for a in first['alternates'])
        assert set(payload['timings_ms']) == {
            'placement',
            'filter_weigh_claim',
            'total',
        }
        assert payload['claim']['retries'] == 0

        # A request nothing can hold: an ERROR notification, outcome failed
        big = testing.spec(vcpus=100000, flavor_name='huge')
        placement.spec = big
        with pytest.raises(exception.NoValidHost):
            sched.select_destinations(ctxt, big)
        failed = got.get(timeout=10)
        assert failed['outcome'] == 'failed'
        assert failed['flavor']['name'] == 'huge'
        assert failed['message']
    finally:
        listener.stop()
        listener.wait()


def test_decision_on_embedded_bus():
    inproc.reset_buses()
    _run('inproc:///decisions')


@pytest.mark.slow
def test_decision_on_rabbitmq():
    url, cleanup = infra.rabbit_vhost()
    try:
        _run(url)
    finally:
        cleanup()


def test_filters():
    payload = {
        'outcome': 'scheduled',
        'flavor': {'name': 'm1.small', 'flavorid': '2'},
        'instances': [{'host': 'host-1'}],
    }
    assert notifications.matches(payload)
    assert notifications.matches(
        payload, hosts=['host-1'], flavors=['2'], outcomes=['scheduled']
    )
    assert not notifications.matches(payload, hosts=['host-2'])
    assert not notifications.matches(payload, flavors=['m1.large'])
    assert not notifications.matches(payload, outcomes=['failed'])


def test_off_emits_nothing():
    conf = sconf.make_conf()
    hm = testing.manager_with(5, conf)
    placement = Placement(hm)
    sched = driver_mod.Scheduler(
        conf, placement, hm, notifier=notifications.DecisionNotifier()
    )
    spec = testing.spec()
    placement.spec = spec
    assert sched.select_destinations(context.get_admin_context(), spec)


def _follow_while_scheduling(url, **filters):
    import io
    import threading
    from nimbus.cmd import cli_insight

    conf = sconf.make_conf()
    sched, placement, transport = _scheduler(conf, url)
    out = io.StringIO()
    done = []
    listening = threading.Event()

    def tail():
        done.append(
            cli_insight.follow(
                transport, out, count=1, timeout=20, ready=listening, **filters
            )
        )

    thread = threading.Thread(target=tail)
    thread.start()
    assert listening.wait(20)
    ctxt = context.get_admin_context()
    for name in ('m1.tiny', 'm1.small'):
        spec = testing.spec(flavor_name=name)
        placement.spec = spec
        sched.select_destinations(ctxt, spec)
    thread.join(30)
    return done, out.getvalue()


def test_follow_filters_by_flavor_embedded():
    inproc.reset_buses()
    done, text = _follow_while_scheduling(
        'inproc:///follow', flavors=['m1.small']
    )
    assert done == [1]
    assert ' m1.small ' in text and 'm1.tiny' not in text
    assert 'scheduled' in text


@pytest.mark.slow
def test_cli_follow_on_rabbitmq():
    """The real command, in its own process, on a RabbitMQ vhost: the
    decision emitted before it started is printed with --backlog."""
    import json
    import subprocess
    import sys

    url, cleanup = infra.rabbit_vhost()
    try:
        conf = sconf.make_conf()
        sched, placement, _transport = _scheduler(conf, url)
        ctxt = context.get_admin_context()
        for name in ('m1.tiny', 'm1.small'):
            spec = testing.spec(flavor_name=name)
            placement.spec = spec
            sched.select_destinations(ctxt, spec)
        proc = subprocess.run(
            [
                sys.executable,
                '-m',
                'nimbus.cmd.cli',
                'decisions',
                '--follow',
                '--backlog',
                '--transport-url',
                url,
                '--flavor',
                'm1.small',
                '--outcome',
                'scheduled',
                '--count',
                '1',
                '--format',
                'json',
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        payload = json.loads(proc.stdout.strip().splitlines()[-1])
        assert payload['flavor']['name'] == 'm1.small'
        assert payload['outcome'] == 'scheduled'
    finally:
        cleanup()
