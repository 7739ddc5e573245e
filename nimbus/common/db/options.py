"""Database connection options for the API and cell databases.

The placement database has its own group, ``[placement_database]``
(see :mod:`nimbus.placement.conf`), with the same name OpenStack Placement
uses.
"""

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

COMMON_OPTS = [
    cfg.IntOpt(
        'max_retries',
        default=10,
        min=0,
        help='Attempts at a transaction that hit a deadlock or a '
        'lost connection before giving up.',
    )
]


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
    conf.register_opts(API_DB_OPTS, group='api_database')
    conf.register_opts(CELL_DB_OPTS + COMMON_OPTS, group='database')


def list_opts():
    return [
        ('api_database', API_DB_OPTS),
        ('database', CELL_DB_OPTS + COMMON_OPTS),
    ]
