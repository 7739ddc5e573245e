"""Database connection options for the API and cell databases.

The placement database has its own group, ``[placement_database]``
(see :mod:`nimbus.placement.conf`), with the same name OpenStack Placement
uses.
"""

import collections

from oslo_config import cfg

API_DB_OPTS = [
    cfg.StrOpt(
        'connection',
        secret=True,
        help='SQLAlchemy URL of the API database (flavors, build '
        'requests, request specs, cell and host mappings, '
        'aggregates, server groups, images). Example: '
        'mysql+pymysql://nimbus:secret@db/nimbus_api',
    )
]

CELL_DB_OPTS = [
    cfg.StrOpt(
        'connection',
        secret=True,
        help="SQLAlchemy URL of this cell's database, for a cell "
        'conductor. Other services find cell databases through '
        'the cell mappings in the API database.',
    )
]

# The connection pool of a server database (MariaDB/MySQL, PostgreSQL),
# in every group that names a database: [api_database], [database],
# [placement_database], [accelerator_database]. The names are oslo.db's.
# SQLite (the embedded default) keeps its own fixed pool.
POOL_OPTS = [
    cfg.IntOpt(
        'max_pool_size',
        default=10,
        min=1,
        help='Connections to this database a process keeps open in its '
        'pool. Every process of every service has its own pool: size '
        "the database's max_connections for the sum (MariaDB's "
        'default is 151).',
    ),
    cfg.IntOpt(
        'max_overflow',
        default=20,
        min=0,
        help='Connections opened beyond max_pool_size under a burst, '
        'closed again when they are returned.',
    ),
    cfg.IntOpt(
        'pool_timeout',
        default=30,
        min=1,
        help='Seconds a transaction waits for a free connection when '
        'max_pool_size + max_overflow are in use before it fails.',
    ),
    cfg.IntOpt(
        'connection_recycle_time',
        default=3600,
        min=1,
        help='Seconds after which a pooled connection is closed and '
        "opened again at its next use (keep it under the server's "
        'wait_timeout).',
    ),
]


class PoolOptions(
    collections.namedtuple(
        'PoolOptions',
        'size overflow timeout recycle',
        defaults=(10, 20, 30, 3600),
    )
):
    """A server database's pool: connections kept (``size``), opened
    beyond them under a burst (``overflow``), seconds to wait for one
    (``timeout``), seconds a connection lives (``recycle``). The defaults
    are the options' defaults."""

    __slots__ = ()


def pool_options(group_opts):
    """The :class:`PoolOptions` of one registered database group
    (``conf.api_database``, ``conf.database``, ...)."""
    return PoolOptions(
        size=group_opts.max_pool_size,
        overflow=group_opts.max_overflow,
        timeout=group_opts.pool_timeout,
        recycle=group_opts.connection_recycle_time,
    )


def service_database_url(conf, group, sync):
    """``[group] connection`` of a service's own database (placement's,
    the accelerator service's), given to ``sync`` first when ``[group]
    sync_on_startup``; ValueError when it is not set."""
    opts = getattr(conf, group)
    url = opts.connection
    if not url:
        raise ValueError('[%s] connection is not set' % group)
    if opts.sync_on_startup:
        sync(url)
    return url


# register_opts and list_opts: the pair each option module has (the
# services and oslo-config-generator call them); alike by design.
def register_opts(conf):
    conf.register_opts(API_DB_OPTS + POOL_OPTS, group='api_database')
    conf.register_opts(CELL_DB_OPTS + POOL_OPTS, group='database')


def list_opts():
    return [
        ('api_database', API_DB_OPTS + POOL_OPTS),
        ('database', CELL_DB_OPTS + POOL_OPTS),
    ]
