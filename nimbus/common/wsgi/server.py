"""The embedded HTTP server (cheroot) for the all-in-one runner and daemons.

Production deployments may serve the same WSGI apps with gunicorn or
uWSGI instead (``nimbus.wsgi.api:application``,
``nimbus.wsgi.placement:application``, ``nimbus.wsgi.accelerator:
application``; see :mod:`nimbus.wsgi`).

What cheroot refuses itself, before the app sees the request (a malformed
``Content-Length``, a bad request line, a chunked body it cannot read), it
answers in the API's own JSON error shape when the app has an
``error_body(status, detail)`` (as :func:`nimbus.common.wsgi.build_app`
gives it), not in cheroot's bare text.

The listening socket's backlog is ``[wsgi] listen_backlog`` (1024 by
default; cheroot's own default, 5, left a burst of clients waiting for SYN
retransmissions or timing out), at most the kernel's
``net.core.somaxconn``.
"""

import socket
import threading

from cheroot import errors as cheroot_errors
from cheroot import makefile as cheroot_makefile
from cheroot import server as cheroot_server
from cheroot import wsgi as cheroot_wsgi
from oslo_log import log as logging

from nimbus.common.wsgi import options

LOG = logging.getLogger(__name__)

SOMAXCONN_PATH = '/proc/sys/net/core/somaxconn'


def system_max_backlog(path=SOMAXCONN_PATH):
    """The kernel's cap on a listen backlog (``net.core.somaxconn``), or
    :data:`socket.SOMAXCONN` where ``path`` cannot be read."""
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return socket.SOMAXCONN


def listen_backlog(requested=None, name='api', system_max=None):
    """The backlog to listen with: ``requested`` (``[wsgi]
    listen_backlog``; its default when None), at most ``system_max`` (the
    kernel's, read when None), with a warning when that caps it."""
    if requested is None:
        requested = options.DEFAULT_LISTEN_BACKLOG
    if requested < 1:
        raise ValueError('listen backlog must be at least 1: %r' % requested)
    if system_max is None:
        system_max = system_max_backlog()
    if requested > system_max:
        LOG.warning(
            '%s: [wsgi] listen_backlog %d is above the system maximum '
            '(net.core.somaxconn) %d; listening with %d',
            name,
            requested,
            system_max,
            system_max,
        )
        return system_max
    return requested


class _JSONErrorRequest(cheroot_server.HTTPRequest):
    """cheroot's request whose own error answers are JSON."""

    def simple_response(self, status, msg=''):
        error_body = getattr(self.server.wsgi_app, 'error_body', None)
        status = str(status)
        if error_body is None or status[:1] not in '45':
            return super().simple_response(status, msg)
        detail = msg.decode('ISO-8859-1') if isinstance(msg, bytes) else msg
        body = error_body(
            int(status[:3]), (detail or status[4:]).strip().rstrip('.') + '.'
        )
        head = [
            '%s %s' % (self.server.protocol, status),
            'Content-Length: %d' % len(body),
            'Content-Type: application/json',
        ]
        if status[:3] in ('413', '414'):
            # As cheroot does: the rest of the request was not read.
            self.close_connection = True
            head.append('Connection: close')
        data = ('\r\n'.join(head) + '\r\n\r\n').encode('ISO-8859-1') + body
        try:
            self.conn.wfile.write(data)
        except socket.error as exc:
            if exc.args[0] not in cheroot_errors.socket_errors_to_ignore:
                raise


class _Collect:
    """Stands in for the connection's ``wfile`` while cheroot composes a
    response head: keeps what it writes."""

    __slots__ = ('data',)

    def __init__(self):
        self.data = b''

    def write(self, data):
        self.data += data


class _OneWriteRequest(_JSONErrorRequest):
    """A response with a known length goes out in one write, head and body
    together (cheroot writes each in its own ``send``: two system calls,
    and two wake-ups of the client, per request). A chunked response, and
    a response without a body, are written as cheroot writes them."""

    _head = None

    def send_headers(self):
        wfile = self.conn.wfile
        self.conn.wfile = collect = _Collect()
        try:
            super().send_headers()
        finally:
            self.conn.wfile = wfile
        if self.chunked_write:
            wfile.write(collect.data)
        else:
            self._head = collect.data

    def write(self, chunk):
        head, self._head = self._head, None
        if head is None:
            super().write(chunk)
        else:
            self.conn.wfile.write(head + chunk)

    def respond(self):
        try:
            super().respond()
        finally:
            # A head without a body (a 204, a HEAD request) or left by an
            # error: written as cheroot would have.
            head, self._head = self._head, None
            if head is not None:
                self.conn.wfile.write(head)


class _SocketReader:
    """The connection's read side without cheroot's pure-Python buffered
    reader (``_pyio.BufferedReader``, whose ``readline`` costs several
    Python calls and a lock per call: about a twentieth of a small
    request's server CPU, for the request line and each header). The same
    answers: ``readline(size)`` through the next newline or ``size`` bytes,
    ``read(size)`` until ``size`` bytes or the end of the stream,
    ``has_data()`` when bytes are buffered (a pipelined request), and the
    socket's own errors (a timeout, a reset) as they come."""

    RECV = 65536

    def __init__(self, sock):
        self._sock = sock
        self._buf = b''
        self.bytes_read = 0
        self.closed = False

    def _recv(self, size):
        return self._sock.recv(max(size, self.RECV))

    def readline(self, size=-1):
        if size is None:
            size = -1
        buf = self._buf
        start = 0
        while True:
            end = buf.find(b'\n', start)
            if end >= 0 and (size < 0 or end < size):
                n = end + 1
                break
            if 0 <= size <= len(buf):
                n = size
                break
            start = len(buf)
            data = self._recv(0)
            if not data:
                n = len(buf)
                break
            buf += data
        line, self._buf = buf[:n], buf[n:]
        self.bytes_read += n
        return line

    def read(self, size=-1):
        buf = self._buf
        if size is None or size < 0:
            chunks = [buf]
            while data := self._recv(0):
                chunks.append(data)
            self._buf = b''
            data = b''.join(chunks)
            self.bytes_read += len(data)
            return data
        if len(buf) < size:
            chunks, have = [buf], len(buf)
            while have < size:
                data = self._recv(min(size - have, 1 << 20))
                if not data:
                    break
                chunks.append(data)
                have += len(data)
            buf = b''.join(chunks)
        data, self._buf = buf[:size], buf[size:]
        self.bytes_read += len(data)
        return data

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def has_data(self):
        return bool(self._buf)

    def readable(self):
        return True

    def close(self):
        self._buf = b''
        self.closed = True


class _JSONErrorConnection(cheroot_server.HTTPConnection):
    RequestHandlerClass = _OneWriteRequest

    def __init__(self, server, sock, makefile=cheroot_makefile.MakeFile):
        super().__init__(server, sock, makefile)
        if makefile is cheroot_makefile.MakeFile:
            # a plain socket (no TLS adapter): read it without _pyio
            self.rfile.close()
            self.rfile = _SocketReader(sock)


# cheroot's connection loop notices a stop at its next select() timeout,
# its expiration_interval (0.5 s by default): a stop took up to half a
# second. 0.05 s, the value cheroot itself uses on Windows, makes a stop
# prompt (each in-process cloud of the tests stops two or three servers)
# for a few more wake-ups of an idle server.
STOP_POLL_INTERVAL = 0.05


class EmbeddedServer:
    """A cheroot server running in a background thread. ``backlog`` is
    ``[wsgi] listen_backlog`` (see :func:`listen_backlog`)."""

    def __init__(self, app, host, port, threads=16, name='api', backlog=None):
        self.name = name
        self.backlog = listen_backlog(backlog, name)
        self._server = cheroot_wsgi.Server(
            (host, port),
            app,
            numthreads=threads,
            server_name=name,
            request_queue_size=self.backlog,
        )
        self._server.ConnectionClass = _JSONErrorConnection
        self._server.expiration_interval = STOP_POLL_INTERVAL
        self._server.prepare()
        self.host, self.port = self._server.bind_addr[:2]
        self._thread = threading.Thread(
            target=self._server.serve, name='wsgi-%s' % name, daemon=True
        )

    @property
    def url(self):
        host = '127.0.0.1' if self.host in ('0.0.0.0', '::') else self.host
        return 'http://%s:%d' % (host, self.port)

    def start(self):
        self._thread.start()
        LOG.info('%s listening on %s', self.name, self.url)
        return self

    def stop(self):
        self._server.stop()
        self._thread.join(timeout=10)

    def wait(self):
        self._thread.join()


def serve(app, host, port, threads=16, name='api', backlog=None):
    """Start serving ``app`` on ``host:port`` (port 0 picks a free one)
    with ``threads`` workers (``[wsgi] server_threads``) and a listen
    backlog of ``backlog`` (``[wsgi] listen_backlog``; its default, 1024,
    when None)."""
    return EmbeddedServer(app, host, port, threads, name, backlog).start()
