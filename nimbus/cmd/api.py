"""nimbus-api: the compute REST API (embedded cheroot server).

For production the same app is importable for gunicorn as
``nimbus.api.wsgi:application``.
"""

from oslo_config import cfg

from nimbus.cmd import common
from nimbus.common import service
from nimbus.common import wsgi
from nimbus import services

CLI_OPTS = [
    cfg.StrOpt('bind-host', dest='bind_host', help='Address to listen on.'),
    cfg.PortOpt('bind-port', dest='bind_port', help='Port to listen on.'),
]


def main(argv=None):
    conf = common.setup('nimbus-api', argv, CLI_OPTS)
    app = services.api_app(conf)
    server = wsgi.serve(app, conf.bind_host or conf.wsgi.api_listen,
                        conf.bind_port or conf.wsgi.api_listen_port,
                        threads=conf.wsgi.server_threads, name='nimbus-api')
    print('nimbus-api listening on %s' % server.url, flush=True)
    service.run_until_signalled([server])


if __name__ == '__main__':
    main()
