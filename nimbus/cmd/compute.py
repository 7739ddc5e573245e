"""nimbus-compute: one compute host on its cell's bus.

``[DEFAULT] host`` names the host; ``[DEFAULT] transport_url`` (or
``[rpc] transport_url``) is the cell's bus. The compute holds no database
credentials.
"""

from nimbus.cmd import common
from nimbus.common import service
from nimbus import services


def main(argv=None):
    conf = common.setup('nimbus-compute', argv, needs_bus=True)
    svc = services.compute_service(conf).start()
    service.run_until_signalled([svc])


if __name__ == '__main__':
    main()
