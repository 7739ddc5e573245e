"""The HTTP servers' listen backlog: ``[wsgi] listen_backlog``.

cheroot listens with a backlog of 5 unless told otherwise: under a burst of
clients the kernel dropped their SYNs, each waited for a retransmission (1
s, 3 s, 7 s...) and one timed out connecting. The servers now listen with
``[wsgi] listen_backlog`` (1024, at most ``net.core.somaxconn``).

What the socket got is read from the kernel (``ss -ltnH``: for a listening
socket Send-Q is its backlog). The burst test fires 1000 concurrent GETs
at a running nimbus-placement-api daemon and checks each one is answered
and that no connection needed a TCP retransmission (``TCP_INFO``
``tcpi_total_retrans``; on loopback a retransmission means the listen
queue dropped a packet), an observation rather than a timing.
"""

import resource
import shutil
import socket
import struct
import subprocess
import threading

import pytest
import requests
from oslo_config import cfg

from nimbus.common import wsgi
from nimbus.common.wsgi import options
from nimbus.common.wsgi import server as wsgi_server
from nimbus.placement import db as placement_db
from nimbus.testing import daemons
from nimbus.testing import infra

pytestmark = pytest.mark.integration

CLIENTS = 1000
# The daemon's [wsgi] listen_backlog: not the default, to see it applied.
DAEMON_BACKLOG = 2000


def _ss_backlog(port):
    """The backlog of the socket listening on ``port`` (ss's Send-Q)."""
    if shutil.which('ss') is None:
        infra.unavailable('ss (iproute2) is not installed')
    out = subprocess.run(
        ['ss', '-ltnH', 'sport = :%d' % port],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [line.split() for line in out.splitlines() if line.strip()]
    assert len(rows) == 1, out
    state, _recv_q, send_q = rows[0][:3]
    assert state == 'LISTEN', out
    return int(send_q)


def _hello(environ, start_response):
    start_response('200 OK', [('Content-Type', 'text/plain')])
    return [b'hello']


def _conf(tmp_path, text):
    path = tmp_path / 'nimbus.conf'
    path.write_text(text)
    conf = cfg.ConfigOpts()
    options.register_opts(conf)
    conf(['--config-file', str(path)], project='nimbus')
    return conf


def _default():
    return min(
        options.DEFAULT_LISTEN_BACKLOG, wsgi_server.system_max_backlog()
    )


@pytest.mark.parametrize(
    'text, expected',
    [
        ('[wsgi]\nlisten_backlog = 77\n', lambda: 77),
        ('[wsgi]\n', _default),
        # Above the kernel's maximum: the maximum.
        (
            '[wsgi]\nlisten_backlog = %d\n'
            % (wsgi_server.system_max_backlog() + 1),
            wsgi_server.system_max_backlog,
        ),
    ],
    ids=['configured', 'default', 'above-somaxconn'],
)
def test_the_socket_listens_with_the_configured_backlog(
    tmp_path, text, expected
):
    conf = _conf(tmp_path, text)
    server = wsgi.serve(
        _hello, '127.0.0.1', 0, backlog=conf.wsgi.listen_backlog, name='t'
    )
    try:
        assert server.backlog == expected()
        assert _ss_backlog(server.port) == expected()
        assert requests.get(server.url, timeout=30).text == 'hello'
    finally:
        server.stop()


@pytest.fixture
def placement_api(tmp_path):
    """A nimbus-placement-api daemon on SQLite (noauth2)."""
    db_url = 'sqlite:///%s/placement.sqlite' % tmp_path
    placement_db.sync(db_url)
    port = daemons.free_port()
    conf = tmp_path / 'placement.conf'
    conf.write_text(
        '[DEFAULT]\nstate_path = %s\n'
        '[placement_database]\nconnection = %s\n'
        '[api]\nauth_strategy = noauth2\n'
        '[wsgi]\nplacement_listen = 127.0.0.1\n'
        'placement_listen_port = %d\nlisten_backlog = %d\n'
        % (tmp_path, db_url, port, DAEMON_BACKLOG)
    )
    daemon = daemons.Daemon(
        'placement-api',
        'nimbus.cmd.placement_api',
        str(conf),
        str(tmp_path / 'placement.log'),
    ).start()
    url = 'http://127.0.0.1:%d/' % port

    def up():
        try:
            return requests.get(url, timeout=5).status_code == 200
        except requests.RequestException:
            return False

    try:
        daemons.wait_for(up, 120, 'nimbus-placement-api at ' + url, [daemon])
        yield port
    finally:
        daemon.stop()


def _total_retrans(sock):
    """``tcpi_total_retrans`` of ``sock``'s ``struct tcp_info`` (after 8
    one-byte fields, the 24th 32-bit one)."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    return struct.unpack_from('I', info, 100)[0]


def _get(port, barrier, results, index):
    barrier.wait()
    try:
        # A bound, not a measure: a dropped SYN is seen in TCP_INFO.
        with socket.create_connection(('127.0.0.1', port), timeout=60) as s:
            s.settimeout(300)
            s.sendall(
                b'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n'
                b'Connection: close\r\n\r\n'
            )
            data = b''
            while chunk := s.recv(65536):
                data += chunk
            results[index] = (data.split(b'\r\n', 1)[0], _total_retrans(s))
    except OSError as exc:
        results[index] = ('%s: %s' % (type(exc).__name__, exc), None)


def _enough_descriptors(wanted):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= wanted:
        return
    if hard != resource.RLIM_INFINITY and hard < wanted:
        infra.unavailable('RLIMIT_NOFILE %d is below %d' % (hard, wanted))
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def test_1000_concurrent_gets_are_all_answered(placement_api):
    port = placement_api
    expected = min(DAEMON_BACKLOG, wsgi_server.system_max_backlog())
    # The daemon listens with the configured backlog.
    assert _ss_backlog(port) == expected
    if expected < CLIENTS:
        infra.unavailable(
            'net.core.somaxconn is %d, below the %d clients of this test'
            % (wsgi_server.system_max_backlog(), CLIENTS)
        )
    _enough_descriptors(CLIENTS + 200)
    results = [None] * CLIENTS
    barrier = threading.Barrier(CLIENTS)
    threads = [
        threading.Thread(target=_get, args=(port, barrier, results, i))
        for i in range(CLIENTS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    failed = [r for r in results if r[0] != b'HTTP/1.1 200 OK']
    assert not failed, '%d of %d failed, e.g. %s' % (
        len(failed),
        CLIENTS,
        failed[:5],
    )
    retransmitted = [r for r in results if r[1]]
    assert not retransmitted, (
        '%d of %d connections needed a retransmission (the listen queue '
        'overflowed)' % (len(retransmitted), CLIENTS)
    )
