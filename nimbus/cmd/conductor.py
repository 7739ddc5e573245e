"""nimbus-conductor: the super conductor, or with --cell NAME a cell's.

A cell conductor reads ``[rpc] transport_url`` (the cell's bus) and
``[database] connection`` (the cell's database) from its config file; it
never opens the API database.
"""

from oslo_config import cfg

from nimbus.cmd import common
from nimbus.common import service
from nimbus import services

CLI_OPTS = [
    cfg.StrOpt('cell', help='Run the conductor of this cell instead of the '
                            'super conductor.'),
]


def main(argv=None):
    conf = common.setup('nimbus-conductor', argv, CLI_OPTS, needs_bus=True)
    if conf.cell:
        svc = services.cell_conductor_service(
            conf, host='%s-%s' % (conf.host, conf.cell))
    else:
        svc = services.super_conductor_service(conf)
    svc.start()
    service.run_until_signalled([svc])


if __name__ == '__main__':
    main()
