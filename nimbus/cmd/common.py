"""What every daemon does first: parse options, set up oslo.log; and once
started, :func:`settle` what start-up built."""

import gc
import sys

from oslo_config import cfg
from oslo_log import log as logging

from nimbus.common import config
from nimbus.cmd import cli_conf
from nimbus.cmd import memtrace
from nimbus.common import secrets


def quiet_warnings():
    cli_conf.quiet_warnings()


def setup(name, argv=None, cli_opts=(), needs_bus=False):
    """Build and parse the config of daemon ``name``; returns the conf.

    ``needs_bus``: the daemon talks RPC, so it must be given a broker
    (``[DEFAULT] transport_url``); the in-process bus is refused with a
    one-line error, since no other process could reach it.
    """
    quiet_warnings()
    conf = cfg.ConfigOpts()
    logging.register_options(conf)
    config.register_all(conf)
    if cli_opts:
        conf.register_cli_opts(cli_opts)
    conf(
        sys.argv[1:] if argv is None else argv,
        project='nimbus',
        prog=name,
        default_config_files=[],
    )
    secrets.setup_logging(conf)
    # [DEFAULT] tracemalloc_frames: where memory goes, in the log
    memtrace.setup(conf)
    if needs_bus:
        from nimbus.common import rpc

        try:
            rpc.require_broker(conf, name)
        except rpc.NoBroker as exc:
            sys.exit(str(exc))
        except ValueError as exc:  # a transport URL that does not parse
            sys.exit(secrets.exit_message(name, exc))
    return conf


def settle():
    """Once a daemon has started: collect start-up's garbage, then move
    every object left (modules, config, caches loaded at start, RPC
    servers) to the collector's permanent generation (``gc.freeze``), so
    that a full collection while the daemon serves no longer walks them.
    Frozen objects are still freed by reference counting; only cycles
    among them are never collected."""
    gc.collect()
    gc.freeze()


WSGI_CLI_OPTS = [
    cfg.HostAddressOpt(
        'host',
        dest='bind_host',
        help='Address to listen on (default from [wsgi]).',
    ),
    cfg.PortOpt(
        'port',
        dest='bind_port',
        help='Port to listen on (default from [wsgi]).',
    ),
]


def listen(name, conf, app, default_host, default_port):
    """Serve ``app`` on ``--host``/``--port`` (else the defaults read from
    the conf) and say where; the running server."""
    from nimbus.common import wsgi

    host = conf.bind_host or default_host(conf)
    port = conf.bind_port if conf.bind_port is not None else default_port(conf)
    server = wsgi.serve(
        app,
        host,
        port,
        threads=conf.wsgi.server_threads,
        name=name,
        backlog=conf.wsgi.listen_backlog,
    )
    print('%s listening on %s' % (name, server.url), flush=True)
    return server


def simulated_hosts_opt(what):
    """``--simulated-hosts N``: serve N simulated hosts (``what``) in the
    process, named ``<[DEFAULT] host>-0001`` and on."""
    return cfg.IntOpt(
        'simulated-hosts',
        dest='simulated_host_count',
        default=0,
        min=0,
        help='Serve this many simulated hosts (%s) in this process, named '
        '<[DEFAULT] host>-0001 and on.' % what,
    )


def serve_wsgi(
    name, app_factory, default_host, default_port, argv=None, needs_bus=False
):
    """Run a REST daemon: parse options, build the app, serve until a
    signal. ``default_host``/``default_port`` read the conf."""
    from nimbus.common import service

    conf = setup(name, argv, WSGI_CLI_OPTS, needs_bus=needs_bus)
    app = app_factory(conf)
    server = listen(name, conf, app, default_host, default_port)
    # The API's dashboard holds a decision listener and open event streams:
    # stopping it ends them, so the server's threads come back at once.
    extra = [app.dashboard] if getattr(app, 'dashboard', None) else []
    settle()
    service.run_until_signalled([server] + extra)
    return 0
