"""nimbus-api: the compute REST API on the embedded HTTP server.

``nimbus-api --config-file F [--host H] [--port P]``. For production the
same app is served by gunicorn or uWSGI as ``nimbus.wsgi.api:application``.
"""

import sys

from nimbus.cmd import common
from nimbus import services


def main(argv=None):
    return common.serve_wsgi(
        'nimbus-api',
        services.api_app,
        lambda conf: conf.wsgi.api_listen,
        lambda conf: conf.wsgi.api_listen_port,
        argv,
        needs_bus=True,
    )


if __name__ == '__main__':
    sys.exit(main())
