"""The embedded HTTP server (cheroot) for the all-in-one runner and daemons.

Production deployments may serve the same WSGI apps with gunicorn
(``nimbus.api.wsgi:application``, ``nimbus.placement.wsgi:application``).
"""

import threading

from cheroot import wsgi as cheroot_wsgi
from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class EmbeddedServer:
    """A cheroot server running in a background thread."""

    def __init__(self, app, host, port, threads=16, name='api'):
        self.name = name
        self._server = cheroot_wsgi.Server((host, port), app,
                                           numthreads=threads,
                                           server_name=name)
        self._server.prepare()
        self.host, self.port = self._server.bind_addr[:2]
        self._thread = threading.Thread(target=self._server.serve,
                                        name='wsgi-%s' % name, daemon=True)

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


def serve(app, host, port, threads=16, name='api'):
    """Start serving ``app`` on ``host:port`` (port 0 picks a free one)."""
    return EmbeddedServer(app, host, port, threads, name).start()
