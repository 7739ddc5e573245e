"""RPC options: the transport URL of this service's bus and call timeouts.

A service's bus is ``[rpc] transport_url`` when set, else oslo.messaging's
own ``[DEFAULT] transport_url`` when set (see
:func:`nimbus.common.rpc.transport_url_of`), else the in-process bus.
"""

import importlib

from oslo_config import cfg
import oslo_messaging as messaging

RPC_OPTS = [
    cfg.StrOpt(
        'transport_url',
        secret=True,
        default=None,
        help='The bus of this service, when it differs from '
        '[DEFAULT] transport_url (the standard oslo.messaging '
        'option, which is read when this one is unset). '
        '``rabbit://user:pass@host:5672/vhost`` in production. '
        "For a compute or a cell conductor this is the cell's "
        'bus; the API-level services use the API bus. When '
        'neither option is set the bus is ``inproc://``, the '
        'in-process bus that only ``nimbus all-in-one`` can use: '
        'the daemons refuse to start on it.',
    ),
    cfg.IntOpt(
        'rpc_response_timeout',
        default=60,
        min=1,
        help='Seconds to wait for the reply to an RPC call.',
    ),
    cfg.IntOpt(
        'rpc_call_monitor_timeout',
        default=30,
        min=0,
        help='For long calls (select_destinations): fail when the '
        'server has sent no heartbeat for this many seconds. '
        '0 disables heartbeats.',
    ),
    cfg.IntOpt(
        'long_rpc_timeout',
        default=1800,
        min=1,
        help='Overall limit of calls that heartbeat (a multi-create '
        'of thousands of instances).',
    ),
]


STOP_HEARTBEAT_RATE = 20

# Rolling upgrades, as Nova's [upgrade_levels]: while some services still
# run the older release, the newer ones cap what they send to it.
UPGRADE_LEVEL_OPTS = [
    cfg.StrOpt(
        name,
        default=None,
        help='The highest RPC version this service sends to the %s '
        '(e.g. "1.4"), for a rolling upgrade while some of them still run '
        'an older release; unset: the newest this release knows. A '
        'message the cap does not allow is sent in its older form when '
        "one exists (oslo.messaging's can_send_version) and refused "
        'otherwise.' % what,
    )
    for name, what in (
        ('conductor', 'super and cell conductors'),
        ('compute', 'compute hosts'),
        ('scheduler', 'schedulers'),
    )
]


# register_opts and list_opts: the pair each option module has (the
# services and oslo-config-generator call them); alike by design.
def register_opts(conf):
    conf.register_opts(RPC_OPTS, group='rpc')
    conf.register_opts(UPGRADE_LEVEL_OPTS, group='upgrade_levels')
    _register_messaging_opts(conf)


# Options oslo.messaging registers only on the global CONF but reads from
# whatever conf the transport was built with.
_GLOBAL_ONLY_OPTS = (
    (
        'oslo_messaging._tracing.client',
        'oslo_messaging_tracing',
        'oslo_messaging_tracing',
    ),
    (
        'oslo_messaging._metrics.client',
        'oslo_messaging_metrics',
        'oslo_messaging_metrics',
    ),
)


def _register_messaging_opts(conf):
    # oslo.messaging registers its driver options lazily on the conf it is
    # given; its tracing options it only registers on the global CONF, so a
    # private ConfigOpts must get them explicitly or call() raises
    # NoSuchOptError.
    # First: list_opts() below hands out copies, which must carry the same
    # defaults as the originals oslo.messaging registers itself later
    # (get_transport), or the two clash (DuplicateOptError).
    messaging.set_transport_defaults(control_exchange='nimbus')
    try:
        from oslo_messaging import opts as om_opts
    except ImportError:  # pragma: no cover
        return
    for group, opts in om_opts.list_opts():
        name = (
            group if isinstance(group, str) else getattr(group, 'name', None)
        )
        if name == 'DEFAULT':
            name = None
        try:
            # [DEFAULT] transport_url among them: the standard option.
            conf.register_opts(opts, group=name)
        except cfg.DuplicateOptError:
            pass
    # A RabbitMQ listener notices that it was stopped only when its poll
    # wakes, every heartbeat_timeout_threshold / heartbeat_rate / 2 seconds
    # (10 s with oslo.messaging's defaults of 60 and 3, capped at 5 s), and
    # a daemon stops two in turn (its RPC server, then its reply queue).
    # Twenty checks per threshold bound that at 1.5 s each; a config file
    # still decides.
    # Durable queues and exchanges (messages are published persistent):
    # a cast sent while a consumer is still reconnecting after a broker
    # restart waits in its queue instead of reaching an exchange with no
    # queue bound and vanishing (a build request lost for good).
    for name, value in (
        ('heartbeat_rate', STOP_HEARTBEAT_RATE),
        ('amqp_durable_queues', True),
    ):
        try:
            conf.set_default(name, value, group='oslo_messaging_rabbit')
        except (cfg.NoSuchOptError, cfg.NoSuchGroupError):  # pragma: no cover
            pass
    for module_name, attr, group in _GLOBAL_ONLY_OPTS:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # pragma: no cover - other oslo.messaging
            continue
        try:
            conf.register_opts(getattr(module, attr), group=group)
        except cfg.DuplicateOptError:
            pass


def version_cap(conf, service):
    """``[upgrade_levels] <service>`` of ``conf`` (None without a conf
    or a cap)."""
    if conf is None:
        return None
    try:
        return getattr(conf.upgrade_levels, service)
    except (cfg.NoSuchOptError, AttributeError):
        return None


def list_opts():
    return [('rpc', RPC_OPTS), ('upgrade_levels', UPGRADE_LEVEL_OPTS)]
