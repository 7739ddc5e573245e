"""nimbus-accelerator-api: the accelerator API, its RPC server (topic
``accelerator``, the agents' reports) and its binder, in one process.

``nimbus-accelerator-api --config-file F [--host H] [--port P]``.
Production may serve ``nimbus.wsgi.accelerator:application`` under
gunicorn or uWSGI as well; this daemon must still run for the RPC server
and the binder.
"""

import sys

from nimbus.cmd import common


def main(argv=None):
    from nimbus.common import service
    from nimbus import services
    from nimbus.common import wsgi

    name = 'nimbus-accelerator-api'
    conf = common.setup(name, argv, common.WSGI_CLI_OPTS, needs_bus=True)
    svc = services.accelerator_service(conf)
    svc.start()
    host = conf.bind_host or conf.accelerator_api.listen
    port = (
        conf.bind_port
        if conf.bind_port is not None
        else conf.accelerator_api.listen_port
    )
    server = wsgi.serve(
        svc.app,
        host,
        port,
        threads=conf.wsgi.server_threads,
        name=name,
        backlog=conf.wsgi.listen_backlog,
    )
    print('%s listening on %s' % (name, server.url), flush=True)
    service.run_until_signalled([svc, server])
    return 0


if __name__ == '__main__':
    sys.exit(main())
