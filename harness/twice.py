"""Run a daemon whose build casts can be sent twice: duplicated messages,
as a broker redelivering or a client retrying would produce them.

``python -m harness.twice nimbus.cmd.conductor --config-file F ...``
runs ``nimbus.cmd.conductor`` with oslo.messaging's cast wrapped: while the
file ``twice-casts.flag`` exists next to the daemon's config file, every
cast of a build method (:data:`METHODS`) goes out twice, the same message
(same arguments, same context) one after the other. Without the file the
daemon is unchanged, so a test turns the fault on and off while the
daemons run (:func:`harness.injectors.duplicate_casts`).

Each doubled cast is logged (``cast ... sent twice``): the log says how
many duplicates the run made.
"""

import os
import runpy
import sys

from oslo_log import log as logging
from oslo_messaging.rpc import client as rpc_client

LOG = logging.getLogger(__name__)

FLAG_NAME = 'twice-casts.flag'
# The casts that start or move a build.
METHODS = frozenset(
    (
        'schedule_and_build_instances',
        'build_instances',
        'build_and_run_instance',
    )
)


def flag_path(config_file):
    return os.path.join(
        os.path.dirname(os.path.abspath(config_file)), FLAG_NAME
    )


def install(flag):
    """Wrap every oslo.messaging cast of this process."""
    original = rpc_client._BaseCallContext.cast

    def cast(self, ctxt, method, **kwargs):
        original(self, ctxt, method, **kwargs)
        if method in METHODS and os.path.exists(flag):
            original(self, ctxt, method, **kwargs)
            LOG.info('cast %s to %s sent twice', method, self.target)

    rpc_client._BaseCallContext.cast = cast


def _config_file(args):
    for index, arg in enumerate(args):
        if arg == '--config-file' and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith('--config-file='):
            return arg.split('=', 1)[1]
    raise SystemExit('harness.twice: no --config-file given')


def main():
    module, args = sys.argv[1], sys.argv[2:]
    install(flag_path(_config_file(args)))
    sys.argv = [module] + args
    runpy.run_module(module, run_name='__main__', alter_sys=True)


if __name__ == '__main__':
    main()
