"""A TCP proxy that can cut every connection through it: a process cut off
from a server (a compute from RabbitMQ) without touching the server or
anyone else's connections to it.

``TcpProxy(target_port).start()`` listens on a free local port and relays
each accepted connection to ``127.0.0.1:target_port``, one thread per
direction. :meth:`TcpProxy.cut` closes every open connection and refuses
new ones (accepted, then closed at once, as a dropped route looks to a
client that keeps trying); :meth:`TcpProxy.heal` lets them through again.
"""

import socket
import threading

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class TcpProxy:
    def __init__(self, target_port, target_host='127.0.0.1'):
        self.target = (target_host, target_port)
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(('127.0.0.1', 0))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open = set()
        self._cut = False
        self._stopped = False
        # Connections made through it, refused while cut, and cut.
        self.accepted = 0
        self.refused = 0
        self.cut_connections = 0

    def start(self):
        threading.Thread(
            target=self._accept, name='proxy-accept', daemon=True
        ).start()
        return self

    def _accept(self):
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                cut = self._cut
                if cut:
                    self.refused += 1
            if cut:
                _close(client)
                continue
            try:
                server = socket.create_connection(self.target, timeout=10)
                server.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self.accepted += 1
                self._open.update((client, server))
            for source, sink in ((client, server), (server, client)):
                threading.Thread(
                    target=self._pipe,
                    args=(source, sink),
                    name='proxy-pipe',
                    daemon=True,
                ).start()

    def _pipe(self, source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            self._forget(source, sink)

    def _forget(self, *sockets):
        with self._lock:
            for sock in sockets:
                self._open.discard(sock)
        for sock in sockets:
            _close(sock)

    def open_connections(self):
        """Connections relayed now (each one counted once)."""
        with self._lock:
            return len(self._open) // 2

    def cut(self):
        """Close every connection and refuse new ones until :meth:`heal`."""
        with self._lock:
            self._cut = True
            victims = list(self._open)
            self._open.clear()
            self.cut_connections += len(victims) // 2
        for sock in victims:
            _close(sock)
        LOG.info(
            'proxy to %s cut: %d sockets closed', self.target, len(victims)
        )

    def heal(self):
        with self._lock:
            self._cut = False

    def stop(self):
        self._stopped = True
        self.cut()
        _close(self._listener)


def _close(sock):
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass
