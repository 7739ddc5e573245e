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

    name = 'nimbus-accelerator-api'
    conf = common.setup(name, argv, common.WSGI_CLI_OPTS, needs_bus=True)
    svc = services.accelerator_service(conf)
    svc.start()
    server = common.listen(
        name,
        conf,
        svc.app,
        lambda c: c.accelerator_api.listen,
        lambda c: c.accelerator_api.listen_port,
    )
    common.settle()
    service.run_until_signalled([svc, server])
    return 0


if __name__ == '__main__':
    sys.exit(main())
