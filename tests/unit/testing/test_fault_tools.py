"""The fault suite's tools: the TCP proxy that cuts a daemon off from a
server, the wrapper that sends build casts twice, and the compute's SIGHUP
reload of its mutable options."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import oslo_messaging as messaging
import pytest

from nimbus.common import config
from nimbus.common import context
from nimbus.common import rpc
from nimbus.common import service
from nimbus.messaging_internals import inproc
from nimbus.testing import tcp_proxy
from harness import twice


@pytest.fixture
def echo_server():
    """A TCP server answering each line with the same line."""
    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    listener.listen(16)

    def serve(conn):
        with conn:
            while True:
                data = conn.recv(4096)
                if not data:
                    return
                conn.sendall(data)

    def accept():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()


def _echo(sock, text):
    sock.sendall(text)
    return sock.recv(4096)


def _dead(sock):
    """True when the connection was closed under us."""
    try:
        sock.sendall(b'x')
        return sock.recv(16) == b''
    except OSError:
        return True


def test_the_proxy_relays_cuts_and_heals(echo_server):
    proxy = tcp_proxy.TcpProxy(echo_server).start()
    try:
        first = socket.create_connection(('127.0.0.1', proxy.port), 5)
        first.settimeout(5)
        assert _echo(first, b'hello') == b'hello'
        assert proxy.open_connections() == 1
        proxy.cut()
        assert _dead(first)
        # While cut: connections are accepted and closed at once.
        during = socket.create_connection(('127.0.0.1', proxy.port), 5)
        during.settimeout(5)
        assert _dead(during)
        assert proxy.refused >= 1
        proxy.heal()
        after = socket.create_connection(('127.0.0.1', proxy.port), 5)
        after.settimeout(5)
        assert _echo(after, b'again') == b'again'
        assert proxy.accepted == 2
    finally:
        proxy.stop()


def test_the_proxy_cuts_only_its_own_connections(echo_server):
    proxy = tcp_proxy.TcpProxy(echo_server).start()
    direct = socket.create_connection(('127.0.0.1', echo_server), 5)
    direct.settimeout(5)
    try:
        proxy.cut()
        assert _echo(direct, b'still here') == b'still here'
    finally:
        proxy.stop()
        direct.close()


def _echo_server(tag):
    """A TCP server answering each line with ``tag`` and the line; its
    port and a function that stops it."""
    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    listener.listen(16)

    def serve(conn):
        with conn:
            while True:
                data = conn.recv(4096)
                if not data:
                    return
                conn.sendall(tag + data)

    def accept():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    def stop():
        # shutdown first: a close alone leaves the blocked accept() with
        # the listening socket, which goes on taking connections.
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()

    threading.Thread(target=accept, daemon=True).start()
    return listener.getsockname()[1], stop


def test_the_round_robin_spreads_and_skips_a_dead_replica():
    """Two replicas behind one port: connections alternate; once one
    replica stops listening every connection reaches the other, and none
    is refused."""
    port_a, stop_a = _echo_server(b'a:')
    port_b, stop_b = _echo_server(b'b:')
    proxy = tcp_proxy.TcpProxy.round_robin([port_a, port_b]).start()
    try:
        answers = []
        for _ in range(4):
            with socket.create_connection(('127.0.0.1', proxy.port), 5) as c:
                c.settimeout(5)
                answers.append(_echo(c, b'x'))
        assert sorted(answers) == [b'a:x', b'a:x', b'b:x', b'b:x']
        stop_a()
        for _ in range(3):
            with socket.create_connection(('127.0.0.1', proxy.port), 5) as c:
                c.settimeout(5)
                assert _echo(c, b'y') == b'b:y'
        assert proxy.per_target[('127.0.0.1', port_b)] == 5
    finally:
        proxy.stop()
        stop_b()
    with pytest.raises(ValueError):
        tcp_proxy.TcpProxy.round_robin([])


class Counter:
    target = messaging.Target(version='1.0')

    def __init__(self):
        self.seen = []

    @rpc.expose(cast=True, required=('n',), types={'n': int})
    def build_and_run_instance(self, ctxt, n):
        self.seen.append(('build', n))

    @rpc.expose(cast=True, required=('n',), types={'n': int})
    def terminate_instance(self, ctxt, n):
        self.seen.append(('terminate', n))


def test_twice_doubles_build_casts_while_its_flag_exists(
    tmp_path, monkeypatch
):
    from oslo_messaging.rpc import client as rpc_client

    monkeypatch.setattr(
        rpc_client._BaseCallContext, 'cast', rpc_client._BaseCallContext.cast
    )
    config_file = tmp_path / 'compute.conf'
    flag = twice.flag_path(str(config_file))
    assert flag == str(tmp_path / twice.FLAG_NAME)
    twice.install(flag)
    conf = config.build_conf([])
    transport = rpc.get_transport(conf, 'inproc:///twice-unit')
    endpoint = Counter()
    server = rpc.get_server(transport, 'compute', [endpoint], 'h1')
    server.start()
    try:
        client = rpc.get_client(transport, 'compute', '1.0', server='h1')
        ctxt = context.get_admin_context()
        client.cast(ctxt, 'build_and_run_instance', n=1)
        open(flag, 'w').close()
        client.cast(ctxt, 'build_and_run_instance', n=2)
        client.cast(ctxt, 'terminate_instance', n=3)
        os.unlink(flag)
        client.cast(ctxt, 'build_and_run_instance', n=4)
        deadline = time.monotonic() + 10
        while len(endpoint.seen) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        assert sorted(endpoint.seen) == [
            ('build', 1),
            ('build', 2),
            ('build', 2),
            ('build', 4),
            ('terminate', 3),
        ]
    finally:
        server.stop()
        server.wait()
        inproc.reset_buses()


def test_twice_runs_the_module_it_wraps(tmp_path):
    config_file = tmp_path / 'x.conf'
    config_file.write_text('[DEFAULT]\n')
    result = subprocess.run(
        [
            sys.executable,
            '-m',
            'harness.twice',
            'nimbus.cmd.manage',
            '--config-file',
            str(config_file),
            '--help',
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert 'usage' in result.stdout.lower()


def test_sighup_reloads_the_mutable_options(tmp_path):
    path = tmp_path / 'compute.conf'
    path.write_text('[fake_driver]\nspawn_seconds = 0\nvcpus = 8\n')
    conf = config.build_conf(['--config-file', str(path)])
    assert conf.fake_driver.spawn_seconds == 0
    done = threading.Event()
    stopped = []

    class Svc:
        def stop(self):
            stopped.append(True)

    def installed():
        handler = signal.getsignal(signal.SIGHUP)
        return getattr(handler, '__name__', None) == 'on_hup'

    def later():
        # Not before the handler is there (SIGHUP's default ends us).
        deadline = time.monotonic() + 10
        while not installed() and time.monotonic() < deadline:
            time.sleep(0.01)
        path.write_text('[fake_driver]\nspawn_seconds = 2.5\nvcpus = 64\n')
        os.kill(os.getpid(), signal.SIGHUP)
        deadline = time.monotonic() + 10
        while conf.fake_driver.spawn_seconds != 2.5:
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        done.set()
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=later, daemon=True).start()
    service.run_until_signalled([Svc()], conf)
    assert done.is_set()
    assert conf.fake_driver.spawn_seconds == 2.5
    # Not mutable: kept until a restart.
    assert conf.fake_driver.vcpus == 8
    assert stopped == [True]
