"""``nimbus``: the user-facing command line.

    nimbus all-in-one [--hosts N] [--demo] [--servers M] [--exit-after-demo]
                      [--state-dir DIR] [--transport-url URL]
    nimbus schedule --dry-run --flavor F [--image I] [--hint K=V]...
                    [--availability-zone Z] [--num-instances N]
    nimbus hosts | servers | cells | services
    nimbus decisions --follow [...]      (nimbus.cmd.cli_insight)
    nimbus capacity --flavor F [...]     (nimbus.cmd.cli_insight)
    nimbus simulate --hosts N [...]      (nimbus.cmd.cli_simulate)
    nimbus host drain|evacuate HOST [--dry-run] [...]  (nimbus.cmd.cli_host)

Every command but all-in-one takes [--format json] [--url URL]
[--placement-url URL] (--url may end in /v2.1, as all-in-one prints it)
and [--config-file PATH]... (nimbus.cmd.cli_conf: the daemons' files).

Parsing the arguments imports nothing but the standard library and the
``cli_*`` modules' registrations: ``nimbus --help`` answers at once, and a
command imports what it runs (handlers are named ``module:function``).
"""

import argparse
import importlib
import json
import os
import sys

from nimbus.cmd import cli_args
from nimbus.cmd import cli_conf


def _all_in_one(args):
    from oslo_log import log as logging
    from rich.console import Console
    from nimbus.allinone import cloud as cloud_mod
    from nimbus.allinone import demo
    from nimbus.common import secrets

    console = Console()
    try:
        cloud = cloud_mod.Cloud(
            args.state_dir,
            hosts=args.hosts,
            transport_url=args.transport_url,
            cell_transport_url=args.cell_transport_url,
            api_port=args.api_port,
            placement_port=args.placement_port,
            shared_hosts=True,
            accelerators=True,
        )
    except cloud_mod.ConfigurationError as exc:
        sys.exit(secrets.mask('nimbus all-in-one: %s' % exc))
    console.print(
        'Starting Nimbus: %d simulated hosts, state in %s'
        % (args.hosts, cloud.state_dir)
    )
    try:
        try:
            cloud.start()
        except Exception as exc:  # noqa: BLE001 - one line on the terminal, the traceback in the log
            # The log file has the traceback; the terminal gets one line.
            logging.getLogger(__name__).exception('all-in-one start failed')
            sys.exit(
                secrets.mask(
                    'nimbus all-in-one: could not start: %s: %s (details in %s)'
                    % (
                        type(exc).__name__,
                        exc,
                        os.path.join(args.state_dir, 'nimbus.log'),
                    )
                )
            )
        console.print('nimbus-api:           %s/v2.1' % cloud.api_url)
        console.print('nimbus-placement-api: %s' % cloud.placement_url)
        console.print('images (Glance API):  %s/image' % cloud.api_url)
        console.print(
            'dashboard:            %s#token=admin:admin' % cloud.dashboard_url
        )
        if cloud.accelerator_url:
            console.print(
                'accelerators (Cyborg API): %s/v2' % cloud.accelerator_url
            )
        console.print('Token (noauth2): X-Auth-Token: admin:admin')
        flavors, image = demo.seed(cloud.api_url)
        console.print(
            'Flavors %s and image %s are ready.'
            % (', '.join(f['name'] for f in flavors), image['name'])
        )
        if args.demo:
            ok = demo.run(
                cloud.api_url,
                cloud.placement_url,
                servers=args.servers,
                console=console,
                accelerator_url=cloud.accelerator_url,
                accelerator_servers=args.accelerator_servers,
            )
            if args.exit_after_demo:
                return 0 if ok else 1
        console.print('Running; Ctrl-C stops.')
        cloud.wait_forever()
    except KeyboardInterrupt:
        pass
    finally:
        cloud.stop()
    return 0


def _resolve(client, kind, ref):
    """A flavor or image given by name becomes its id (ids pass through)."""
    if kind == 'flavor':
        items = client.get('/flavors')['flavors']
    else:
        items = client._call('GET', client.images_url + '/images')['images']
    if any(item['id'] == ref for item in items):
        return ref
    matches = [item['id'] for item in items if item.get('name') == ref]
    if len(matches) > 1:
        sys.exit('%s name %r is ambiguous: use its id' % (kind, ref))
    return matches[0] if matches else ref


def _parse_hints(pairs):
    hints = {}
    for hint in pairs:
        key, sep, value = hint.partition('=')
        if not sep or not key:
            sys.exit('--hint takes KEY=VALUE, got %r' % hint)
        hints.setdefault(key, []).append(value)
    # same_host/different_host are lists; other hints take one value.
    return {
        k: v if k in ('same_host', 'different_host') or len(v) > 1 else v[0]
        for k, v in hints.items()
    }


def _schedule(args):
    if not args.dry_run:
        sys.exit(
            'only --dry-run is supported: real builds go through POST /servers'
        )
    client = cli_conf.compute_client(args)
    try:
        body = {
            'flavorRef': _resolve(client, 'flavor', args.flavor),
            'scheduler_hints': _parse_hints(args.hint),
        }
        if args.image:
            body['imageRef'] = _resolve(client, 'image', args.image)
        if args.availability_zone:
            body['availability_zone'] = args.availability_zone
        if args.num_instances:
            body['num_instances'] = args.num_instances
        result = client.post('/os-scheduler/dry-run', body)['dry_run']
    except RuntimeError as exc:  # the API's error, already readable
        sys.exit(str(exc))
    if args.format == 'json':
        print(json.dumps(result, indent=2, sort_keys=True))
        return 0
    from nimbus.cmd import cli_render

    cli_render.dry_run(result)
    return 0


def build_parser():
    parser = argparse.ArgumentParser(prog='nimbus')
    sub = parser.add_subparsers(dest='command', required=True)
    aio = sub.add_parser(
        'all-in-one', help='run the whole cloud in one process'
    )
    aio.add_argument('--hosts', type=int, default=8)
    aio.add_argument('--demo', action='store_true')
    aio.add_argument('--servers', type=int, default=20)
    aio.add_argument(
        '--accelerator-servers',
        type=int,
        default=2,
        help='the demo also boots this many servers with a '
        'device profile (one fake GPU each)',
    )
    aio.add_argument('--exit-after-demo', action='store_true')
    aio.add_argument('--state-dir', default=os.path.join(os.getcwd(), 'state'))
    aio.add_argument(
        '--transport-url',
        default=None,
        help='API bus (default: in-process, inproc:///)',
    )
    aio.add_argument(
        '--cell-transport-url',
        default=None,
        help='cell1 bus: another vhost than --transport-url. '
        'Derived for an inproc:// URL (inproc:///X -> '
        'inproc:///X-cell1); required with rabbit://, '
        'whose vhosts must exist on the broker',
    )
    aio.add_argument('--api-port', type=int, default=8774)
    aio.add_argument('--placement-port', type=int, default=8778)
    aio.set_defaults(func=_all_in_one)
    client = _client_options()
    sched = sub.add_parser(
        'schedule',
        parents=[client],
        help='ask the scheduler where a server would go',
    )
    sched.add_argument(
        '--dry-run',
        action='store_true',
        help='rank hosts and explain, claiming nothing',
    )
    sched.add_argument('--flavor', required=True, help='flavor id or name')
    sched.add_argument('--image', help='image id or name')
    sched.add_argument('--availability-zone')
    sched.add_argument(
        '--num-instances',
        type=cli_args.positive_int,
        metavar='N',
        help='where would N instances of one request go: '
        "each one's host and alternates, and how many "
        'fit (the JSON has placements, placed and '
        'placements_message)',
    )
    sched.add_argument(
        '--hint',
        action='append',
        default=[],
        metavar='KEY=VALUE',
        help='scheduler hint; repeat for several (and for '
        'several same_host/different_host values)',
    )
    sched.set_defaults(func=_schedule)
    views = 'nimbus.cmd.cli_views:'
    parsers = {}
    for name, text in (
        (
            'hosts',
            'per resource provider and class: used and capacity (one read)',
        ),
        ('servers', 'every server of every project'),
        ('cells', 'the cells, with their hosts and servers'),
        ('services', 'the services of every cell'),
    ):
        parsers[name] = sub.add_parser(name, parents=[client], help=text)
        parsers[name].set_defaults(func=views + name)
    from nimbus.cmd import cli_host
    from nimbus.cmd import cli_insight
    from nimbus.cmd import cli_simulate

    cli_host.register(sub, client)
    cli_insight.register(sub)
    cli_simulate.register(sub)
    return parser


def _client_options():
    """The options of every command that talks to the APIs."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument('--format', choices=['table', 'json'], default='table')
    parent.add_argument(
        '--url',
        help='compute API URL, with or without /v2.1 (default: the '
        'config files, $NIMBUS_API_URL, %s)' % cli_conf.DEFAULT_API_URL,
    )
    parent.add_argument(
        '--placement-url',
        help='placement API URL (default: the config files, '
        '$NIMBUS_PLACEMENT_URL, %s)' % cli_conf.DEFAULT_PLACEMENT_URL,
    )
    cli_conf.add_option(parent)
    parent.add_argument(
        '--user', default=os.environ.get('NIMBUS_USER', 'admin')
    )
    parent.add_argument(
        '--project', default=os.environ.get('NIMBUS_PROJECT', 'admin')
    )
    parent.add_argument(
        '--roles', default=os.environ.get('NIMBUS_ROLES', 'admin')
    )
    return parent


def _handler(func):
    """A handler named ``module:function`` is imported only now."""
    if isinstance(func, str):
        module, _, name = func.partition(':')
        func = getattr(importlib.import_module(module), name)
    return func


def _client_conf(args):
    """Parse ``--config-file`` and fill in ``--url``/``--placement-url``:
    flag, config files, environment, default (cli_conf)."""
    paths = getattr(args, 'config_file', None) or []
    try:
        conf = cli_conf.load(paths, bus=getattr(args, 'needs_bus', False))
    except cli_conf.ConfigError as exc:
        sys.exit('nimbus %s: %s' % (args.command, exc))
    if hasattr(args, 'url'):
        args.url = cli_conf.resolve(
            args.url,
            cli_conf.api_url(conf),
            'NIMBUS_API_URL',
            cli_conf.DEFAULT_API_URL,
        )
    if hasattr(args, 'placement_url'):
        args.placement_url = cli_conf.resolve(
            args.placement_url,
            cli_conf.placement_url(conf),
            'NIMBUS_PLACEMENT_URL',
            cli_conf.DEFAULT_PLACEMENT_URL,
        )
    args.conf = conf
    return conf


def main(argv=None):
    args = build_parser().parse_args(argv)
    # Not nimbus.cmd.common: it imports every option of the daemons.
    cli_conf.quiet_warnings()
    from nimbus.common import secrets

    if args.command == 'all-in-one':
        from nimbus.common import config

        conf = config.build_conf([])
        # The all-in-one cloud logs every service to a file in its state
        # directory; the terminal shows the progress and the tables.
        os.makedirs(args.state_dir, exist_ok=True)
        conf.set_override(
            'log_file', os.path.join(args.state_dir, 'nimbus.log')
        )
        conf.set_override('use_stderr', False)
    else:
        conf = _client_conf(args)
        # Client commands: only warnings, on stderr, no files.
        conf.set_override(
            'default_log_levels',
            ['nimbus=WARNING', 'urllib3=WARNING', 'keystoneauth=ERROR'],
        )
    secrets.setup_logging(conf)
    func = _handler(args.func)
    import requests

    try:
        sys.exit(func(args))
    except RuntimeError as exc:  # an API's error, already readable
        sys.exit('nimbus: %s' % exc)
    except requests.ConnectionError as exc:
        url = getattr(args, 'url', None) or 'the API'
        sys.exit(
            'nimbus: cannot reach %s: %s'
            % (
                url,
                str(exc.args[0]).split(':')[-1].strip(' )"\'')
                if exc.args
                else exc,
            )
        )


if __name__ == '__main__':
    main()
