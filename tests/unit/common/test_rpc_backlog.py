"""nimbus.common.rpc.backlog without a broker: which URLs get a trimmer,
and the scheduler's service runs one only on RabbitMQ with the stream on
(tests/integration/test_decision_backlog.py trims a real queue)."""

import logging

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


def test_keep_is_at_least_one():
    with pytest.raises(ValueError, match='keep must be at least 1'):
        backlog.BacklogTrimmer('rabbit://h:5672/', ['q'], 0)


def test_an_unreachable_broker_is_logged_not_raised(caplog):
    trimmer = backlog.BacklogTrimmer(
        'rabbit://guest:guest@127.0.0.1:1/', ['q'], 10, connect_timeout=1
    )
    with caplog.at_level(logging.WARNING, 'nimbus.common.rpc.backlog'):
        assert trimmer.trim() == {}
    assert 'Could not trim the notification backlog' in caplog.text


def test_the_in_process_bus_gets_no_trimmer():
    trimmer = backlog.BacklogTrimmer('inproc:///x', ['q'], 10)
    assert not trimmer.enabled
    assert trimmer.trim() == {}


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


def test_the_scheduler_trims_its_decision_backlog_on_rabbitmq(tmp_path):
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
