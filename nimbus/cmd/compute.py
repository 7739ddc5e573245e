"""nimbus-compute: one compute host on its cell's bus.

``[DEFAULT] host`` names the host; ``[DEFAULT] transport_url`` (or
``[rpc] transport_url``) is the cell's bus. The compute holds no database
credentials.

``--simulated-hosts N`` runs N simulated hosts instead, named
``<host>-0001`` ... (see :mod:`nimbus.compute.simulated`), on one bus
connection and one worker pool.

SIGHUP reloads the config files' mutable options (``[fake_driver]
spawn_seconds``: a compute made slow, or fast again, while it runs).
"""

import os
import signal
import sys
import time

from oslo_log import log as logging

from nimbus.cmd import common
from nimbus.common import rpc
from nimbus.common import service
from nimbus.compute import exception as compute_exception
from nimbus import services

LOG = logging.getLogger(__name__)

CLI_OPTS = [common.simulated_hosts_opt('fake driver')]


def main(argv=None):
    conf = common.setup('nimbus-compute', argv, CLI_OPTS, needs_bus=True)
    if conf.simulated_host_count:
        computes = services.simulated_computes(conf, conf.simulated_host_count)
        began = time.monotonic()
        failed = computes.start()
        # One line the benchmark (and an operator) can wait for.
        print(
            'nimbus-compute: %d simulated hosts reported in %.1fs '
            '(%d failed)'
            % (
                len(computes.names) - len(failed),
                time.monotonic() - began,
                len(failed),
            ),
            flush=True,
        )
        common.settle()
        service.run_until_signalled([computes], conf)
        return
    svc = services.compute_service(conf)
    # A service that stops itself (a reshape met in a periodic update)
    # ends the process as SIGTERM would, and the exit status says so.
    svc.on_fatal = lambda reason: os.kill(os.getpid(), signal.SIGTERM)
    try:
        svc.start()
    except compute_exception.ReshapeFailed:
        rpc.cleanup_transports()
        sys.exit(1)
    common.settle()
    service.run_until_signalled([svc], conf)
    if svc.fatal:
        sys.exit(1)


if __name__ == '__main__':
    main()
