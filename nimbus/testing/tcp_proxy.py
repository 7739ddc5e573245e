"""A TCP proxy that can cut every connection through it: a process cut off
from a server (a compute from RabbitMQ) without touching the server or
anyone else's connections to it.

``TcpProxy(target_port).start()`` listens on a free local port and relays
each accepted connection to ``127.0.0.1:target_port``, one thread per
direction. :meth:`TcpProxy.cut` closes every open connection and refuses
new ones (accepted, then closed at once, as a dropped route looks to a
client that keeps trying); :meth:`TcpProxy.heal` lets them through again.

:meth:`TcpProxy.round_robin` is the load balancer in front of replicas of
one HTTP service (two nimbus-api processes, say): each new connection goes
to the next target that accepts it, so a replica that was killed is
skipped until it listens again, as HAProxy's health checks would.
"""

import socket
import threading

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class TcpProxy:
    def __init__(self, target_port, target_host='127.0.0.1', listen_port=0):
        self.target = (target_host, target_port)
        self.targets = [self.target]
        self._next = 0
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(('127.0.0.1', listen_port))
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
        # Connections relayed to each target (round robin).
        self.per_target = {}

    @classmethod
    def round_robin(cls, target_ports, listen_port=0, host='127.0.0.1'):
        """A proxy spreading connections over ``target_ports`` in turn,
        skipping a target that refuses the connection."""
        if not target_ports:
            raise ValueError('a round robin needs at least one target')
        proxy = cls(target_ports[0], host, listen_port)
        proxy.targets = [(host, port) for port in target_ports]
        return proxy

    def _connect(self):
        """A connection to the next target that accepts one, or None."""
        with self._lock:
            start = self._next
            self._next = (self._next + 1) % len(self.targets)
        for offset in range(len(self.targets)):
            target = self.targets[(start + offset) % len(self.targets)]
            try:
                server = socket.create_connection(target, timeout=10)
            except OSError:
                continue
            server.settimeout(None)
            with self._lock:
                self.per_target[target] = self.per_target.get(target, 0) + 1
            return server
        return None

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
            server = self._connect()
            if server is None:
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
