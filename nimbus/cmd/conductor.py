"""nimbus-conductor: the super conductor, or with --cell NAME a cell's.

A cell conductor reads ``[DEFAULT] transport_url`` (or ``[rpc]
transport_url``: the cell's bus) and ``[database] connection`` (the cell's
database) from its config file. Its service record names ``[DEFAULT]
host``; its RPC server is ``<host>-<NAME>``. When the
config also names the API database (``[api_database] connection``), the
cell's mapping there is checked first: the cell must exist, and its
transport URL and database must be the ones this config gives, or the
conductor would serve another cell's bus or write another cell's database.
It exits with one line naming the mismatch. Without an API database (a
cell conductor needs none) nothing can be checked; the config is trusted.
"""

import sys

from oslo_config import cfg

from nimbus.cmd import common
from nimbus.common import db as common_db
from nimbus.common import rpc
from nimbus.common import secrets
from nimbus.common import service
from nimbus import services

CLI_OPTS = [
    cfg.StrOpt(
        'cell',
        help='Run the conductor of this cell instead of the super conductor.',
    )
]


def check_cell_mapping(conf, name):
    """The one-line reason this config does not match cell ``name``'s
    mapping in the API database, or None (also when there is no API
    database to check against)."""
    if not conf.api_database.connection:
        return None
    from nimbus.db import cell_mappings

    try:
        cells = {
            c['name']: c
            for c in cell_mappings.list_cells(services.api_db(conf))
        }
    except Exception as exc:  # noqa: BLE001 - any failure reading the mappings is the answer
        return 'cannot read the cell mappings: %s' % exc
    cell = cells.get(name)
    if cell is None:
        return (
            'cell %s is not mapped in the API database (nimbus-manage '
            'cell create --name %s ...)' % (name, name)
        )
    bus = rpc.transport_url_of(conf)
    if not rpc.same_bus(bus, cell['transport_url']):
        return (
            "cell %s's mapping has transport URL %s but this config "
            'gives %s'
            % (name, rpc.mask_url(cell['transport_url']), rpc.mask_url(bus))
        )
    database = conf.database.connection
    if database and common_db.normalize_url(
        database
    ) != common_db.normalize_url(cell['database_connection']):
        return (
            "cell %s's mapping has another database than this "
            "config's [database] connection" % name
        )
    return None


def main(argv=None):
    conf = common.setup('nimbus-conductor', argv, CLI_OPTS, needs_bus=True)
    if conf.cell:
        mismatch = check_cell_mapping(conf, conf.cell)
        if mismatch:
            sys.exit(
                secrets.mask(
                    'nimbus-conductor --cell %s: %s' % (conf.cell, mismatch)
                )
            )
        # Recorded (os-services) under the host the operator configured;
        # the RPC server name also names the cell.
        svc = services.cell_conductor_service(
            conf, host=conf.host, server='%s-%s' % (conf.host, conf.cell)
        )
    else:
        svc = services.super_conductor_service(conf)
    svc.start()
    common.settle()
    service.run_until_signalled([svc])


if __name__ == '__main__':
    main()
