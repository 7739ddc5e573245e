"""nimbus-manage: databases, cells and hosts.

    nimbus-manage --config-file F db sync [--database api|cells|placement|accelerator]
    nimbus-manage --config-file F cell create --name N --transport-url U \
        --database-connection D
    nimbus-manage --config-file F cell list
    nimbus-manage --config-file F cell discover-hosts
    nimbus-manage --config-file F audit [--json] [--heal]
        (see nimbus.cmd.manage_audit)
    nimbus-manage --config-file F placement migrate-compute-inventory --host H
        (see :mod:`nimbus.cmd.manage_placement`)

``cell list`` and every error show URLs with their passwords masked.
``cell create`` refuses a transport URL that reaches the API bus (this
config's ``transport_url``) or another cell's bus: same URL, or the same
broker host and vhost.
"""

import sys

from oslo_config import cfg
from oslo_log import log as logging

from nimbus.cmd import common
from nimbus.cmd import manage_audit
from nimbus.cmd import manage_placement
from nimbus.common import db as common_db
from nimbus.common import rpc
from nimbus.common import secrets
from nimbus import db as nimbus_db
from nimbus.db import cell_mappings


def _api_db(conf):
    if not conf.api_database.connection:
        sys.exit('[api_database] connection is not set')
    return common_db.get_database(conf.api_database.connection)


# ``db sync --database NAME``: the option that must be set for each.
SYNC_DATABASES = {
    'api': '[api_database] connection',
    'cells': '[api_database] connection (the cells it maps) or '
    '[database] connection',
    'placement': '[placement_database] connection',
    'accelerator': '[accelerator_database] connection',
}


def _sync_cells(conf, synced):
    if conf.api_database.connection:
        for cell in cell_mappings.list_cells(_api_db(conf)):
            nimbus_db.sync_cell(cell['database_connection'])
            synced.append('cell %s' % cell['name'])
    if conf.database.connection:
        nimbus_db.sync_cell(conf.database.connection)
        synced.append('cell database of this node')


def db_sync(conf):
    """Create or upgrade every database the config names, or with
    ``--database`` that one only (exit 1 when the config does not name
    it): ``api``, ``cells`` (every cell the API database maps, or this
    node's ``[database]``), ``placement``, ``accelerator``."""
    only = conf.category.sync_database
    wanted = set(SYNC_DATABASES) if only is None else {only}
    named = {
        'api': bool(conf.api_database.connection),
        'cells': bool(
            conf.api_database.connection or conf.database.connection
        ),
        'placement': bool(conf.placement_database.connection),
        'accelerator': bool(conf.accelerator_database.connection),
    }
    if only is not None and not named[only]:
        sys.exit(
            'db sync --database %s: this config does not set %s'
            % (only, SYNC_DATABASES[only])
        )
    synced = []
    if 'api' in wanted and named['api']:
        nimbus_db.sync_api(conf.api_database.connection)
        synced.append('api')
    if 'cells' in wanted:
        _sync_cells(conf, synced)
    if 'placement' in wanted and named['placement']:
        from nimbus.placement import db as placement_db

        placement_db.sync(conf.placement_database.connection)
        synced.append('placement')
    if 'accelerator' in wanted and named['accelerator']:
        from nimbus.accelerator import db as accelerator_db

        accelerator_db.sync(conf.accelerator_database.connection)
        synced.append('accelerator')
    for name in synced:
        print('synced: %s' % name)
    if not synced:
        if only is None:
            sys.exit('No database connection configured')
        print('synced: nothing (no cell is mapped yet)')


def _api_bus(conf):
    """The API bus this config names, or None when it names none."""
    url = rpc.transport_url_of(conf)
    return None if url == rpc.EMBEDDED_URL else url


def cell_create(conf):
    args = conf.category
    name, url, connection = (
        args.cell_name,
        args.cell_transport_url,
        args.cell_database_connection,
    )
    if not (name and url and connection):
        sys.exit(
            'cell create needs --name, --transport-url and '
            '--database-connection'
        )
    api_db = _api_db(conf)
    if name != 'cell0':
        try:
            cell_mappings.check_bus(api_db, name, url, _api_bus(conf))
        except ValueError as exc:
            sys.exit(secrets.exit_message('cell create', exc))
    # The database first: a cell whose database cannot be reached is not
    # mapped (every service would trip over it).
    try:
        nimbus_db.sync_cell(connection)
    except Exception as exc:  # noqa: BLE001 - the failure is reported in one line
        # The log formatter masks the password (nimbus.common.secrets).
        logging.getLogger(__name__).debug(
            'cell create: the database %s of cell %s failed',
            connection,
            name,
            exc_info=True,
        )
        sys.exit(
            secrets.mask(
                'cell create: cannot prepare the database %s '
                'of cell %s: %s: %s'
                % (
                    connection,
                    name,
                    type(exc).__name__,
                    str(exc).splitlines()[0],
                )
            )
        )
    if name == 'cell0':
        uuid = cell_mappings.ensure_cell0(api_db, connection)
    else:
        uuid = cell_mappings.create_cell(api_db, name, url, connection)
    print(uuid)


def cell_list(conf):
    """uuid, name, transport URL and database URL of every cell; the URLs
    with their passwords masked."""
    for cell in cell_mappings.list_cells(_api_db(conf)):
        print(
            '%s  %s  %s  %s'
            % (
                cell['uuid'],
                cell['name'],
                secrets.mask_url(cell['transport_url']),
                secrets.mask_url(cell['database_connection']),
            )
        )


def cell_discover_hosts(conf):
    for host in cell_mappings.discover_hosts(_api_db(conf)):
        print('mapped host %s' % host)


def add_commands(subparsers):
    db = subparsers.add_parser('db').add_subparsers(dest='action')
    db.required = True
    sync = db.add_parser('sync')
    sync.add_argument(
        '--database',
        dest='sync_database',
        choices=sorted(SYNC_DATABASES),
        default=None,
        help='Sync this database only (default: every one the config names).',
    )
    sync.set_defaults(func=db_sync)
    cell = subparsers.add_parser('cell').add_subparsers(dest='action')
    cell.required = True
    create = cell.add_parser('create')
    # Own dests: oslo.config answers ``name`` with the sub-command's name,
    # and ``transport_url`` is [DEFAULT] transport_url (the API bus).
    create.add_argument('--name', dest='cell_name')
    create.add_argument('--transport-url', dest='cell_transport_url')
    create.add_argument(
        '--database-connection', dest='cell_database_connection'
    )
    create.set_defaults(func=cell_create)
    cell.add_parser('list').set_defaults(func=cell_list)
    cell.add_parser('discover-hosts').set_defaults(func=cell_discover_hosts)
    manage_audit.add_parser(subparsers)
    manage_placement.add_commands(subparsers)


def main(argv=None):
    opt = cfg.SubCommandOpt('category', title='commands', handler=add_commands)
    conf = common.setup('nimbus-manage', argv, [opt])
    try:
        conf.category.func(conf)
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001 - the failure is reported in one line
        # A database or broker that cannot be reached says so in one line;
        # its URL (which the driver may quote) without the password.
        logging.getLogger(__name__).debug(
            'nimbus-manage failed', exc_info=True
        )
        sys.exit(
            secrets.exit_message(
                'nimbus-manage %s' % conf.category.name,
                '%s: %s' % (type(exc).__name__, exc),
            )
        )


if __name__ == '__main__':
    main()
