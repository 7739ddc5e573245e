"""Configuration: options are declared next to the code that reads them.

Nothing in Nimbus reads a global ``cfg.CONF``. A process builds one
``cfg.ConfigOpts`` with :func:`build_conf` and hands it to the services it
runs. Each options module exposes ``register_opts(conf)`` and ``list_opts()``;
the latter feeds ``oslo-config-generator`` (see ``etc/nimbus/``).
"""

import functools
import importlib
import importlib.metadata

from oslo_config import cfg
from oslo_log import log as logging

# Modules whose options every Nimbus process registers: the
# ``oslo.config.opts`` entry points of the ``nimbus`` distribution
# (setup.cfg), the list oslo-config-generator reads.
OPTS_ENTRY_POINTS = 'oslo.config.opts'

DEFAULT_OPTS = [
    cfg.StrOpt(
        'host',
        default='localhost',
        help='Name of this node: the compute host name for '
        'nimbus-compute, the service host for the others.',
    ),
    cfg.StrOpt(
        'state_path',
        default='/var/lib/nimbus',
        help='Directory for state files (SQLite databases in the '
        'embedded mode).',
    ),
    cfg.IntOpt(
        'report_interval',
        default=10,
        min=1,
        help='Seconds between service heartbeats.',
    ),
    cfg.IntOpt(
        'service_down_time',
        default=60,
        min=1,
        help='A service whose last heartbeat is older than this many '
        'seconds is considered down.',
    ),
    cfg.IntOpt(
        'reclaim_instance_interval',
        default=0,
        min=0,
        help='Soft delete: above 0, deleting a server that has run only '
        'shuts it down and marks it SOFT_DELETED (a restore brings it '
        'back, a forceDelete deletes it at once); its compute deletes it '
        'for good once it has been soft-deleted this many seconds, '
        'checking every this many seconds. 0: a delete is final at once.',
    ),
    cfg.IntOpt(
        'shelved_offload_time',
        default=0,
        min=-1,
        help='Seconds a shelved server keeps its guest and its resources '
        'on its host before its compute offloads it (SHELVED_OFFLOADED: '
        'guest destroyed, allocation released). 0: offloaded as soon as '
        'it is shelved; -1: never offloaded but by shelveOffload.',
    ),
    cfg.IntOpt(
        'shelved_poll_interval',
        default=3600,
        min=-1,
        help="Seconds between a compute's checks for shelved servers "
        'past shelved_offload_time. 0 or -1: no check.',
    ),
    cfg.BoolOpt(
        'allow_resize_to_same_host',
        default=False,
        help='A resize may choose the host the server is on (else the '
        'source is never a candidate). A cold migrate always leaves it.',
    ),
    cfg.IntOpt(
        'resize_confirm_window',
        default=0,
        min=0,
        help='Above 0, each compute confirms the resizes and cold '
        'migrations that have waited in VERIFY_RESIZE on it longer than '
        'this many seconds (checked every this many seconds); a move '
        "that changed cells is confirmed by the super conductor's "
        'recovery pass instead ([conductor] recovery_interval). 0: never.',
    ),
    cfg.IntOpt(
        'migrate_max_retries',
        default=-1,
        min=-1,
        help='How many more destinations a live migration tries when the '
        "chosen one fails its pre-checks (the destination's "
        'check_can_live_migrate_destination); each retry asks the '
        'scheduler again without the hosts that failed. -1: no limit; '
        '0: no retry.',
    ),
]


# register_opts and list_opts: the pair each option module has (the
# services and oslo-config-generator call them); alike by design.
def register_opts(conf):
    conf.register_opts(DEFAULT_OPTS)


def list_opts():
    return [('DEFAULT', DEFAULT_OPTS)]


def option_module_names():
    """The modules of Nimbus's ``oslo.config.opts`` entry points, in their
    order (each has ``register_opts(conf)`` and ``list_opts()``)."""
    return list(_option_module_names())


@functools.cache
def _option_module_names():
    # Read once per process: scanning every installed distribution's entry
    # points costs about 0.2 s of CPU, and every conf built (one per
    # service and per host of an in-process cloud) asked again.
    names = []
    for entry in importlib.metadata.entry_points(group=OPTS_ENTRY_POINTS):
        if entry.name.split('.')[0] == 'nimbus' and entry.module not in names:
            names.append(entry.module)
    return tuple(names)


def _option_modules():
    for name in option_module_names():
        try:
            yield importlib.import_module(name)
        except ImportError as exc:
            # A module that does not exist yet (or whose optional
            # dependency is absent) must not break every other service.
            if name in str(exc) or name.rsplit('.', 1)[0] in str(exc):
                continue
            raise


def register_all(conf):
    """Register every Nimbus option on ``conf`` (idempotent)."""
    logging.register_options(conf) if not _has_group(
        conf, 'log_config_append'
    ) else None
    for module in _option_modules():
        module.register_opts(conf)
    return conf


def _has_group(conf, opt):
    try:
        conf[opt]
        return True
    except cfg.NoSuchOptError:
        return False


def build_conf(
    args=None, project='nimbus', default_config_files=None, overrides=None
):
    """Build a private, fully registered ConfigOpts and parse ``args``.

    ``overrides`` is ``{group: {name: value}}`` (``'DEFAULT'`` for the
    default group) applied with ``set_override`` after parsing; tests and
    the all-in-one runner use it instead of writing files.
    """
    conf = cfg.ConfigOpts()
    register_all(conf)
    conf(
        args if args is not None else [],
        project=project,
        default_config_files=default_config_files or [],
    )
    for group, values in (overrides or {}).items():
        for name, value in values.items():
            conf.set_override(
                name, value, group=None if group == 'DEFAULT' else group
            )
    return conf


def list_all_opts():
    """Every option of every module, for oslo-config-generator."""
    result = []
    for module in _option_modules():
        if hasattr(module, 'list_opts'):
            result.extend(module.list_opts())
    return result
