"""Where the ``nimbus`` CLI finds a cloud: its flags, the daemons' config
files (``--config-file``, repeatable, later files win as in oslo.config),
its environment variables, then the built-in defaults, in that order.

From the config files it reads:

- the compute API: ``[compute_client] endpoint``, else the address
  nimbus-api listens on (``[wsgi] api_listen``/``api_listen_port``);
- placement: ``[placement_client] endpoint``, else ``[wsgi]
  placement_listen``/``placement_listen_port``;
- how to authenticate to nimbus-api: with ``auth_strategy = keystone`` in
  ``[compute_client]`` (else in ``[placement_client]``, the service user
  of an API-level file such as nimbus.conf) a keystoneauth session loaded
  from that group (``auth_type`` and its options, or ``auth_section``)
  gets the token; otherwise noauth2's ``user:project``;
- the scheduler's bus (``nimbus decisions``): ``[rpc] transport_url``, else
  ``[DEFAULT] transport_url``, and every oslo.messaging option with the
  daemons' own defaults (``control_exchange = nimbus``, durable queues and
  exchanges), so the CLI declares what the daemons declared.

Only this module's functions import oslo.config: ``nimbus --help`` does
not.
"""

import os

DEFAULT_API_URL = 'http://127.0.0.1:8774'
DEFAULT_PLACEMENT_URL = 'http://127.0.0.1:8778'
# What a listen address of "every interface" is reached at from here.
_ANY = ('0.0.0.0', '::', '')


class ConfigError(Exception):
    """A config file that cannot be read (one line for the terminal)."""


def add_option(parser):
    parser.add_argument(
        '--config-file',
        action='append',
        default=[],
        metavar='PATH',
        help="a daemon's config file (e.g. /etc/nimbus/nimbus.conf) to "
        'read the endpoints and the bus from; repeat for several '
        '(later files win). Flags win over it, it wins over the '
        'NIMBUS_* variables',
    )


def quiet_warnings():
    """What every Nimbus command silences (the daemons through
    :func:`nimbus.cmd.common.quiet_warnings`, the ``nimbus`` CLI without
    importing it)."""
    import warnings

    # eventlet's deprecation banner comes from a transitive import of
    # oslo.service; Nimbus does not use eventlet.
    warnings.filterwarnings('ignore', message='.*[Ee]ventlet.*')
    warnings.filterwarnings('ignore', category=DeprecationWarning)


def load(paths, bus=False):
    """A private ConfigOpts with the options the CLI reads, parsed from
    ``paths``; ``bus``: also every messaging option, with the defaults the
    daemons register (:func:`nimbus.common.rpc.options.register_opts`)."""
    from oslo_config import cfg
    from oslo_log import log as logging

    conf = cfg.ConfigOpts()
    logging.register_options(conf)
    if paths:
        from nimbus.accelerator import conf as accelerator_conf
        from nimbus.common.clients import options as client_options
        from nimbus.common.wsgi import options as wsgi_options

        conf.register_opts(
            client_options.PLACEMENT_CLIENT_OPTS, group=client_options.GROUP
        )
        conf.register_opts(
            accelerator_conf.COMPUTE_CLIENT_OPTS,
            group=accelerator_conf.COMPUTE_CLIENT_GROUP,
        )
        conf.register_opts(wsgi_options.WSGI_OPTS, group='wsgi')
        from nimbus.common.clients import auth

        for group in (client_options.GROUP, 'compute_client'):
            auth.register_opts(conf, group)
    if bus:
        from nimbus.common.rpc import options as rpc_options

        rpc_options.register_opts(conf)
    args = []
    for path in paths:
        args += ['--config-file', path]
    try:
        conf(args, project='nimbus', prog='nimbus', default_config_files=[])
    except (cfg.Error, ValueError) as exc:
        raise ConfigError(str(exc).strip()) from exc
    # A daemon's file may name its log file or syslog: the CLI logs its
    # warnings to stderr only.
    for name, value in (
        ('log_file', None),
        ('log_dir', None),
        ('log_config_append', None),
        ('use_syslog', False),
        ('use_journal', False),
        ('use_json', False),
        ('use_eventlog', False),
        ('use_stderr', True),
        ('debug', False),
    ):
        try:
            conf.set_override(name, value)
        except cfg.NoSuchOptError:  # pragma: no cover - older oslo.log
            pass
    return conf


def from_file(conf, name, group=None):
    """The option's value when a config file set it, else None."""
    from oslo_config import cfg

    try:
        location = conf.get_location(name, group)
    except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
        return None
    if location is None or location.location != cfg.Locations.user:
        return None
    value = conf[group][name] if group else conf[name]
    return value if value not in (None, '') else None


def _listen_url(conf, host_opt, port_opt):
    host = from_file(conf, host_opt, 'wsgi')
    port = from_file(conf, port_opt, 'wsgi')
    if host is None and port is None:
        return None
    host = conf.wsgi[host_opt] if host is None else host
    port = conf.wsgi[port_opt] if port is None else port
    if host in _ANY:
        host = '127.0.0.1'
    elif ':' in host:
        host = '[%s]' % host
    return 'http://%s:%s' % (host, port)


def api_url(conf):
    """nimbus-api's URL from the config files, or None."""
    return from_file(conf, 'endpoint', 'compute_client') or _listen_url(
        conf, 'api_listen', 'api_listen_port'
    )


def placement_url(conf):
    """nimbus-placement-api's URL from the config files, or None."""
    return from_file(conf, 'endpoint', 'placement_client') or _listen_url(
        conf, 'placement_listen', 'placement_listen_port'
    )


def transport_url(conf):
    """The scheduler's bus from the config files, or None."""
    return from_file(conf, 'transport_url', 'rpc') or from_file(
        conf, 'transport_url'
    )


def resolve(flag, from_conf, env, default):
    """The first of: the flag, the config files, ``$env``, ``default``."""
    for value in (flag, from_conf, os.environ.get(env) if env else None):
        if value:
            return value
    return default


def keystone_group(conf):
    """The group whose keystoneauth options authenticate the CLI to
    nimbus-api, or None (noauth2)."""
    for group in ('compute_client', 'placement_client'):
        if from_file(conf, 'auth_strategy', group) == 'keystone':
            return group
    return None


class KeystoneSession:
    """What :class:`nimbus.allinone.client.ComputeClient` calls on its
    session, over a keystoneauth session: the token comes from Keystone
    (noauth2's ``X-Auth-Token``/``X-Roles`` are not sent), the other
    headers go with every request."""

    def __init__(self, sender, headers):
        self.sender = sender
        self.headers = {
            k: v
            for k, v in headers.items()
            if k.lower() not in ('x-auth-token', 'x-roles')
        }

    def request(self, method, url, **kwargs):
        from keystoneauth1 import exceptions as ks_exc
        import requests

        headers = dict(self.headers)
        headers.update(kwargs.pop('headers', None) or {})
        try:
            return self.sender.request(method, url, headers=headers, **kwargs)
        except ks_exc.ClientException as exc:
            raise RuntimeError('identity service: %s' % exc) from exc
        except requests.ConnectionError as exc:
            # The identity service's or the API's address: the text names
            # which ("Unable to establish connection to URL: ...").
            raise RuntimeError(str(exc).split(': HTTP')[0]) from exc


def compute_client(args):
    """The compute API client of a command: ``args.url`` and, when the
    config files say keystone, a keystoneauth session."""
    from nimbus.allinone.client import ComputeClient

    client = ComputeClient(
        args.url, user=args.user, project=args.project, roles=args.roles
    )
    keystone = keystone_session(args, client.session.headers)
    if keystone is not None:
        client.session = keystone
    return client


def keystone_session(args, headers=None):
    """A :class:`KeystoneSession` when the config files say keystone (see
    :func:`keystone_group`), else None. ``headers``: the noauth2 client's,
    of which all but the token and roles are kept."""
    conf = getattr(args, 'conf', None)
    group = keystone_group(conf) if conf is not None else None
    if not group:
        return None
    from nimbus.common.clients import auth

    try:
        session = auth.load_session(conf, group)
    except auth.AuthConfigError as exc:
        raise RuntimeError(str(exc)) from exc
    return KeystoneSession(auth.KeystoneSender(session), headers or {})
