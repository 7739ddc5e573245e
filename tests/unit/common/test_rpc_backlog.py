"""nimbus.common.rpc.backlog without a broker: which URLs get a watch,
the policy command, and the scheduler's service runs the watch only on
RabbitMQ with the stream on (tests/integration/test_decision_backlog.py
bounds a real queue with the policy and watches one without it)."""

import logging
import re

import pytest

from nimbus import services
from nimbus.common import config
from nimbus.common import rpc
from nimbus.common.rpc import backlog
from nimbus.messaging_internals import inproc
from nimbus.scheduler import conf as sched_conf
from nimbus.scheduler import notifications


@pytest.mark.parametrize(
    'url, expected',
    [
        (
            'rabbit://guest:guest@127.0.0.1:5672/nimbus',
            ['amqp://guest:guest@127.0.0.1:5672/nimbus'],
        ),
        (
            'rabbit://u:p@h1:5672,u:p@h2:5673/',
            ['amqp://u:p@h1:5672/', 'amqp://u:p@h2:5673/'],
        ),
        ('rabbit://u:p%40x@h1:5672/a/b', ['amqp://u:p%40x@h1:5672/a%2Fb']),
        ('inproc:///cloud', []),
        ('fake://', []),
    ],
)
def test_broker_urls(url, expected):
    assert backlog.broker_urls(url) == expected


def test_the_bound_is_at_least_one():
    with pytest.raises(ValueError, match='bound must be at least 1'):
        backlog.BacklogWatch('rabbit://h:5672/', ['q'], 0)
    with pytest.raises(ValueError, match='bound must be at least 1'):
        backlog.policy_args('v', ['q'], 0)


@pytest.mark.parametrize(
    'url, vhost',
    [
        ('rabbit://u:p@h:5672/nimbus', 'nimbus'),
        ('rabbit://u:p@h:5672/', '/'),
        ('rabbit://u:p@h:5672', '/'),
        ('rabbit://u:p@h1:5672,u:p@h2:5672/a%2Fb', 'a/b'),
    ],
)
def test_vhost_of(url, vhost):
    assert backlog.vhost_of(url) == vhost


def test_the_policy_command_names_exactly_the_queues():
    args = backlog.policy_args('nimbus', notifications.QUEUES, 1000)
    assert args == [
        'set_policy',
        '-p',
        'nimbus',
        '--apply-to',
        'queues',
        'nimbus-notifications',
        r'^(notifications\.info|notifications\.error)$',
        '{"max-length":1000}',
    ]
    pattern = re.compile(args[6])
    assert pattern.match('notifications.info')
    assert not pattern.match('notifications.info.extra')
    assert not pattern.match('notificationsXinfo')
    assert backlog.policy_command('nimbus', ['a.b'], 5) == (
        'rabbitmqctl set_policy -p nimbus --apply-to queues '
        "nimbus-notifications '^(a\\.b)$' '{\"max-length\":5}'"
    )


def test_an_unreachable_broker_is_logged_not_raised(caplog):
    watch = backlog.BacklogWatch(
        'rabbit://guest:guest@127.0.0.1:1/', ['q'], 10, connect_timeout=1
    )
    with caplog.at_level(logging.WARNING, 'nimbus.common.rpc.backlog'):
        assert watch.check() == {}
    assert 'Could not read the notification backlog' in caplog.text


def test_the_in_process_bus_gets_no_watch():
    watch = backlog.BacklogWatch('inproc:///x', ['q'], 10)
    assert not watch.enabled
    assert watch.check() == {}


def _scheduler(tmp_path, url, **options):
    conf = config.build_conf([])
    sched_conf.register_opts(conf)
    conf.set_override('transport_url', url)
    conf.set_override(
        'connection', 'sqlite:///%s' % (tmp_path / 'api.db'), 'api_database'
    )
    for name, value in options.items():
        conf.set_override(name, value, group='scheduler')
    try:
        svc = services.scheduler_service(conf, host='s1')
        svc.stop()  # never started: ends the manager's periodic reloads
        # the scheduler's other periodics (its heartbeat) are not ours
        return [
            periodic.name
            for periodic in svc.periodics
            if periodic.name == 'decision-backlog'
        ]
    finally:
        rpc.cleanup_transports(conf)
        inproc.reset_buses()


def test_the_scheduler_watches_its_decision_backlog_on_rabbitmq(tmp_path):
    url = 'rabbit://guest:guest@127.0.0.1:5672/unused'
    assert _scheduler(tmp_path, url) == ['decision-backlog']
    assert _scheduler(tmp_path, url, decision_backlog=0) == []
    assert _scheduler(tmp_path, url, emit_decisions=False) == []
    assert _scheduler(tmp_path, 'inproc:///sched-backlog') == []


def test_the_queues_are_the_streams_topic_and_priorities():
    assert notifications.QUEUES == (
        'notifications.info',
        'notifications.error',
    )
