"""Which bus a service uses, and that daemons refuse the in-process one."""

import os
import subprocess
import sys

import pytest

from nimbus.common import config
from nimbus.common import rpc


def _conf(tmp_path, text=''):
    path = tmp_path / 'nimbus.conf'
    path.write_text(text)
    return config.build_conf(['--config-file', str(path)])


def test_nothing_set_is_the_in_process_bus_not_oslo_default(tmp_path):
    conf = _conf(tmp_path)
    # oslo.messaging's own default (rabbit:// as guest on localhost) is
    # never used silently.
    assert conf.transport_url == 'rabbit://'
    assert rpc.transport_url_of(conf) == 'inproc://'


def test_default_transport_url_is_honoured(tmp_path):
    conf = _conf(
        tmp_path, '[DEFAULT]\ntransport_url = rabbit://u:p@mq:5672/nimbus\n'
    )
    assert rpc.transport_url_of(conf) == 'rabbit://u:p@mq:5672/nimbus'
    assert rpc.require_broker(conf, 'x') == 'rabbit://u:p@mq:5672/nimbus'


def test_rpc_transport_url_still_wins(tmp_path):
    conf = _conf(
        tmp_path,
        '[DEFAULT]\n'
        'transport_url = rabbit://u:p@mq:5672/api\n'
        '[rpc]\n'
        'transport_url = rabbit://u:p@mq:5672/cell1\n',
    )
    assert rpc.transport_url_of(conf) == 'rabbit://u:p@mq:5672/cell1'


def test_an_override_of_default_transport_url_counts_as_set():
    conf = config.build_conf(
        [], overrides={'DEFAULT': {'transport_url': 'rabbit://u:p@mq/v'}}
    )
    assert rpc.transport_url_of(conf) == 'rabbit://u:p@mq/v'


@pytest.mark.parametrize(
    'text, reason',
    [
        ('', 'no transport_url is set'),
        (
            '[DEFAULT]\ntransport_url = inproc:///x\n',
            'transport_url is inproc:///x',
        ),
        ('[rpc]\ntransport_url = inproc://\n', 'transport_url is inproc://'),
    ],
)
def test_require_broker_refuses_the_in_process_bus(tmp_path, text, reason):
    conf = _conf(tmp_path, text)
    with pytest.raises(rpc.NoBroker) as info:
        rpc.require_broker(conf, 'nimbus-x')
    message = str(info.value)
    assert message.startswith('nimbus-x: %s; ' % reason)
    assert '\n' not in message
    assert '[DEFAULT] transport_url = rabbit://' in message


@pytest.mark.slow
@pytest.mark.parametrize(
    'module, prog',
    [
        ('nimbus.cmd.scheduler', 'nimbus-scheduler'),
        ('nimbus.cmd.compute', 'nimbus-compute'),
        ('nimbus.cmd.conductor', 'nimbus-conductor'),
        ('nimbus.cmd.api', 'nimbus-api'),
    ],
)
def test_daemons_without_a_broker_exit_with_one_line(tmp_path, module, prog):
    path = tmp_path / 'nimbus.conf'
    path.write_text(
        '[api_database]\nconnection = sqlite:///%s\n' % (tmp_path / 'api.db')
    )
    env = dict(os.environ, PYTHONWARNINGS='ignore')
    result = subprocess.run(
        [sys.executable, '-m', module, '--config-file', str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 1
    assert 'Traceback' not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith('%s: no transport_url is set' % prog)


# -- the transport cache ------------------------------------------------------


@pytest.fixture
def cleanups(monkeypatch):
    """Record every transport.cleanup() call."""
    import oslo_messaging as messaging

    closed = []
    original = messaging.Transport.cleanup

    def cleanup(self):
        closed.append(self)
        original(self)

    monkeypatch.setattr(messaging.Transport, 'cleanup', cleanup)
    yield closed
    rpc.cleanup_transports()


def test_transports_are_cached_per_conf_object_and_url(cleanups):
    conf_a, conf_b = config.build_conf([]), config.build_conf([])
    transport = rpc.get_transport(conf_a, 'inproc:///cache-x')
    assert rpc.get_transport(conf_a, 'inproc:///cache-x') is transport
    assert rpc.get_transport(conf_a, 'inproc:///cache-y') is not transport
    assert rpc.get_transport(conf_b, 'inproc:///cache-x') is not transport
    assert set(rpc.transports_of(conf_a)) == {
        'inproc:///cache-x',
        'inproc:///cache-y',
    }


def test_a_reused_id_never_returns_another_confs_transport(cleanups):
    old, new = config.build_conf([]), config.build_conf([])
    stale = rpc.get_transport(old, 'inproc:///reuse')
    # What a garbage-collected conf whose id a new conf got would leave
    # behind under the new conf's id.
    with rpc._TRANSPORTS_LOCK:
        rpc._TRANSPORTS[id(new)] = rpc._TRANSPORTS.pop(id(old))
    assert rpc.transports_of(new) == {}
    assert rpc.get_transport(new, 'inproc:///reuse') is not stale


def test_cleanup_closes_one_confs_transports_or_all(cleanups):
    conf_a, conf_b = config.build_conf([]), config.build_conf([])
    ta = rpc.get_transport(conf_a, 'inproc:///clean')
    tb = rpc.get_transport(conf_b, 'inproc:///clean')
    rpc.cleanup_transports(conf_a)
    assert cleanups == [ta]
    assert rpc.transports_of(conf_a) == {}
    assert rpc.transports_of(conf_b) == {'inproc:///clean': tb}
    assert rpc.get_transport(conf_a, 'inproc:///clean') is not ta
    rpc.cleanup_transports()
    assert tb in cleanups and rpc.transports_of(conf_b) == {}


def test_run_until_signalled_stops_services_and_closes_transports(cleanups):
    import signal
    import threading

    from nimbus.common import service

    conf = config.build_conf([])
    transport = rpc.get_transport(conf, 'inproc:///signalled')
    stopped = []

    class Service:
        def stop(self):
            stopped.append(self)

    before = signal.getsignal(signal.SIGINT)
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM)).start()
    service.run_until_signalled([Service()])
    assert len(stopped) == 1
    assert transport in cleanups and rpc.transports_of(conf) == {}
    # The process's own handlers are back.
    assert signal.getsignal(signal.SIGINT) is before


def test_the_first_conf_of_a_process_gets_a_transport(tmp_path):
    # oslo.messaging registers its own [DEFAULT] options when it builds a
    # transport; the copies Nimbus registered first must not clash.
    code = (
        'from nimbus.common import config, rpc; '
        'conf = config.build_conf([]); '
        'rpc.get_transport(conf, "inproc:///first"); '
        'print(conf.control_exchange)'
    )
    result = subprocess.run(
        [sys.executable, '-c', code],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PYTHONWARNINGS='ignore'),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == 'nimbus'
