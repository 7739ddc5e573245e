"""nimbus-api: the compute REST API (embedded cheroot server).

``nimbus-api --config-file /etc/nimbus/nimbus.conf [--host H] [--port P]``.
For production the same app is importable for gunicorn as
``nimbus.api.wsgi:application``.
"""

import argparse
import sys

from oslo_log import log as logging

from nimbus.cmd import common
from nimbus.common import config
from nimbus.common import service
from nimbus.common import wsgi
from nimbus import services

LOG = logging.getLogger(__name__)


def main(argv=None):
    common.quiet_warnings()
    parser = argparse.ArgumentParser(prog='nimbus-api')
    parser.add_argument('--config-file', action='append', default=[],
                        help='Configuration file (repeatable).')
    parser.add_argument('--config-dir', action='append', default=[],
                        help='Configuration directory (repeatable).')
    parser.add_argument('--host', '--bind-host', default=None,
                        help='Listen address (default [wsgi] api_listen).')
    parser.add_argument('--port', '--bind-port', type=int, default=None,
                        help='Listen port (default [wsgi] api_listen_port).')
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    conf = config.build_conf(
        [a for f in args.config_file for a in ('--config-file', f)] +
        [a for d in args.config_dir for a in ('--config-dir', d)])
    logging.setup(conf, 'nimbus')
    app = services.api_app(conf)
    host = args.host or conf.wsgi.api_listen
    port = conf.wsgi.api_listen_port if args.port is None else args.port
    server = wsgi.serve(app, host, port, threads=conf.wsgi.server_threads,
                        name='nimbus-api')
    print('nimbus-api listening on %s' % server.url, flush=True)
    service.run_until_signalled([server])
    return 0


if __name__ == '__main__':
    sys.exit(main())
