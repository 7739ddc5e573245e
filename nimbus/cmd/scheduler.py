"""nimbus-scheduler: select_destinations on the API bus."""

from nimbus.cmd import common
from nimbus.common import service
from nimbus import services


def main(argv=None):
    conf = common.setup('nimbus-scheduler', argv, needs_bus=True)
    svc = services.scheduler_service(conf).start()
    common.settle()
    service.run_until_signalled([svc])


if __name__ == '__main__':
    main()
