"""nimbus-placement-api: serve the placement API with the embedded server.

``nimbus-placement-api --config-file /etc/nimbus/nimbus.conf [--host H]
[--port P]``. Production may instead run ``nimbus.placement.wsgi:application``
under gunicorn.
"""

import argparse
import signal
import sys

from oslo_log import log as logging

from nimbus.common import config
from nimbus.common import wsgi
from nimbus.placement import wsgi as placement_wsgi

LOG = logging.getLogger(__name__)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='nimbus-placement-api')
    parser.add_argument('--config-file', action='append', default=[],
                        help='Configuration file (repeatable).')
    parser.add_argument('--host', default=None,
                        help='Listen address (default [wsgi] '
                             'placement_listen).')
    parser.add_argument('--port', type=int, default=None,
                        help='Listen port (default [wsgi] '
                             'placement_listen_port).')
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    conf = config.build_conf(
        [a for f in args.config_file for a in ('--config-file', f)])
    logging.setup(conf, 'nimbus')
    app = placement_wsgi.make_app(conf)
    host = args.host or conf.wsgi.placement_listen
    port = conf.wsgi.placement_listen_port if args.port is None else args.port
    server = wsgi.serve(app, host, port, threads=conf.wsgi.server_threads,
                        name='placement')
    print('nimbus-placement-api listening on %s' % server.url, flush=True)

    def stop(signum, frame):
        LOG.info('Signal %s: stopping', signum)
        server.stop()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.wait()
    return 0


if __name__ == '__main__':
    sys.exit(main())
