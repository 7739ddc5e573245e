"""nimbus-manage: databases, cells and hosts.

    nimbus-manage --config-file F db sync
    nimbus-manage --config-file F cell create --name N --transport-url U \
        --database-connection D
    nimbus-manage --config-file F cell list
    nimbus-manage --config-file F cell discover-hosts
"""

import sys

from oslo_config import cfg

from nimbus.cmd import common
from nimbus.common import db as common_db
from nimbus import db as nimbus_db
from nimbus.db import cell_mappings


def _api_db(conf):
    if not conf.api_database.connection:
        sys.exit('[api_database] connection is not set')
    return common_db.get_database(conf.api_database.connection)


def db_sync(conf):
    """Create or upgrade every database the config names."""
    synced = []
    if conf.api_database.connection:
        nimbus_db.sync_api(conf.api_database.connection)
        synced.append('api')
        for cell in cell_mappings.list_cells(_api_db(conf)):
            nimbus_db.sync_cell(cell['database_connection'])
            synced.append('cell %s' % cell['name'])
    if conf.database.connection:
        nimbus_db.sync_cell(conf.database.connection)
        synced.append('cell database of this node')
    if conf.placement_database.connection:
        from nimbus.placement import db as placement_db
        placement_db.sync(conf.placement_database.connection)
        synced.append('placement')
    for name in synced:
        print('synced: %s' % name)
    if not synced:
        sys.exit('No database connection configured')


def cell_create(conf):
    args = conf.category
    if not (args.name and args.transport_url and args.database_connection):
        sys.exit('cell create needs --name, --transport-url and '
                 '--database-connection')
    api_db = _api_db(conf)
    if args.name == 'cell0':
        uuid = cell_mappings.ensure_cell0(api_db, args.database_connection)
    else:
        uuid = cell_mappings.create_cell(api_db, args.name,
                                         args.transport_url,
                                         args.database_connection)
    nimbus_db.sync_cell(args.database_connection)
    print(uuid)


def cell_list(conf):
    for cell in cell_mappings.list_cells(_api_db(conf)):
        print('%s  %s' % (cell['uuid'], cell['name']))


def cell_discover_hosts(conf):
    for host in cell_mappings.discover_hosts(_api_db(conf)):
        print('mapped host %s' % host)


def add_commands(subparsers):
    db = subparsers.add_parser('db').add_subparsers(dest='action')
    db.required = True
    db.add_parser('sync').set_defaults(func=db_sync)
    cell = subparsers.add_parser('cell').add_subparsers(dest='action')
    cell.required = True
    create = cell.add_parser('create')
    create.add_argument('--name')
    create.add_argument('--transport-url')
    create.add_argument('--database-connection')
    create.set_defaults(func=cell_create)
    cell.add_parser('list').set_defaults(func=cell_list)
    cell.add_parser('discover-hosts').set_defaults(func=cell_discover_hosts)


def main(argv=None):
    opt = cfg.SubCommandOpt('category', title='commands',
                            handler=add_commands)
    conf = common.setup('nimbus-manage', argv, [opt])
    conf.category.func(conf)


if __name__ == '__main__':
    main()
