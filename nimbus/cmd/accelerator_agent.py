"""nimbus-accelerator-agent: the accelerator agent of a compute host.

``nimbus-accelerator-agent --config-file F [--simulated-hosts N]``.
``[DEFAULT] host`` names the host (the compute's name, whose provider the
device providers go under); ``[DEFAULT] transport_url`` (or ``[rpc]
transport_url``) is the accelerator service's bus; ``[placement_client]``
reaches placement. The agent holds no database credentials.

``--simulated-hosts N`` serves N hosts named as ``nimbus-compute
--simulated-hosts N`` names its hosts (``<host>-0001`` ...), on one bus
connection and one worker pool.
"""

import sys
import time

from oslo_log import log as logging

from nimbus.accelerator import drivers
from nimbus.cmd import common
from nimbus.messaging_internals import simulated

LOG = logging.getLogger(__name__)

NAME = 'nimbus-accelerator-agent'

CLI_OPTS = [common.simulated_hosts_opt('fake devices')]


def main(argv=None):
    conf = common.setup(NAME, argv, CLI_OPTS, needs_bus=True)
    from nimbus import services

    count = conf.simulated_host_count
    hosts = simulated.host_names(conf.host, count) if count else [conf.host]
    agents = services.accelerator_agents(conf, hosts)
    began = time.monotonic()
    try:
        failed = agents.start()
    except drivers.DriverNotFound as exc:
        agents.stop()
        sys.exit('%s: %s ([accelerator_agent] enabled_drivers)' % (NAME, exc))
    print(
        '%s: %d hosts started in %.1fs (%d failed)'
        % (
            NAME,
            len(hosts) - len(failed),
            time.monotonic() - began,
            len(failed),
        ),
        flush=True,
    )
    from nimbus.common import service

    common.settle()
    service.run_until_signalled([agents])


if __name__ == '__main__':
    main()
