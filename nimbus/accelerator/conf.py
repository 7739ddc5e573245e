"""Options of the accelerator service.

``[accelerator_database]``: its own database. ``[accelerator_api]``: where
nimbus-accelerator-api listens and how the binder paces itself.
``[compute_client]``: how the binder reaches nimbus-api to deliver
``accelerator-request-bound`` events.
"""

from oslo_config import cfg

from nimbus.common.clients import auth
from nimbus.common.db import options as db_options

DATABASE_OPTS = [
    cfg.StrOpt(
        'connection',
        secret=True,
        default=None,
        help='SQLAlchemy URL of the accelerator database (device '
        'profiles, accelerator requests, reported devices), '
        'e.g. mysql+pymysql://nimbus:secret@db/accelerator. '
        'nimbus-manage db sync creates it when set.',
    ),
    cfg.BoolOpt(
        'sync_on_startup',
        default=True,
        help='Run the accelerator database migrations when the '
        'accelerator API starts.',
    ),
]

API_OPTS = [
    cfg.HostAddressOpt(
        'listen',
        default='0.0.0.0',
        help='Address nimbus-accelerator-api listens on.',
    ),
    cfg.PortOpt(
        'listen_port',
        default=6666,
        help="Port nimbus-accelerator-api listens on (Cyborg's).",
    ),
    cfg.FloatOpt(
        'bind_poll_interval',
        default=1.0,
        min=0.01,
        help='Seconds between two looks of the binder for pending '
        'binds and due events when nothing woke it.',
    ),
    cfg.FloatOpt(
        'event_retry_initial',
        default=1.0,
        min=0.01,
        help='Seconds before the first retry of an '
        'accelerator-request-bound event nimbus-api could not '
        'deliver yet; doubled at each attempt.',
    ),
    cfg.FloatOpt(
        'event_retry_max',
        default=60.0,
        min=0.01,
        help='Longest wait between two attempts at an event. '
        'Events are never dropped while their ARQ is bound '
        'or failed; they go when it is unbound or deleted.',
    ),
]

COMPUTE_CLIENT_GROUP = 'compute_client'

COMPUTE_CLIENT_OPTS = [
    cfg.URIOpt(
        'endpoint',
        default=None,
        help='Base URL of nimbus-api, version included (e.g. '
        'http://127.0.0.1:8774/v2.1), where the binder posts '
        'accelerator-request-bound events. Unset: events are '
        'kept pending until it is set.',
    ),
    cfg.StrOpt(
        'auth_strategy',
        default='noauth2',
        choices=['noauth2', 'keystone'],
        help='noauth2: send the token "nimbus:service" with roles '
        'admin,service. keystone: a keystoneauth session loaded '
        'from this group (auth_type and its options, or '
        'auth_section).',
    ),
    cfg.IntOpt(
        'timeout',
        default=30,
        min=1,
        help='Seconds before an event request times out.',
    ),
]


# register_opts and list_opts: the pair each option module has (the
# services and oslo-config-generator call them); alike by design.
def register_opts(conf):
    conf.register_opts(
        DATABASE_OPTS + db_options.POOL_OPTS, group='accelerator_database'
    )
    conf.register_opts(API_OPTS, group='accelerator_api')
    conf.register_opts(COMPUTE_CLIENT_OPTS, group=COMPUTE_CLIENT_GROUP)
    auth.register_opts(conf, COMPUTE_CLIENT_GROUP)


def list_opts():
    return [
        ('accelerator_database', DATABASE_OPTS + db_options.POOL_OPTS),
        ('accelerator_api', API_OPTS),
        (COMPUTE_CLIENT_GROUP, COMPUTE_CLIENT_OPTS + auth.list_opts()),
    ]
