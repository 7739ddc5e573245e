"""nimbus-placement-api: the placement API on the embedded HTTP server.

``nimbus-placement-api --config-file F [--host H] [--port P]``. Production
may instead run ``nimbus.wsgi.placement:application`` under gunicorn or
uWSGI.
"""

import sys

from nimbus.cmd import common
from nimbus import services


def main(argv=None):
    return common.serve_wsgi(
        'nimbus-placement-api',
        services.placement_app,
        lambda conf: conf.wsgi.placement_listen,
        lambda conf: conf.wsgi.placement_listen_port,
        argv,
    )


if __name__ == '__main__':
    sys.exit(main())
