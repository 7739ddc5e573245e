"""``nimbus host drain HOST`` and ``nimbus host evacuate HOST``: the
operator's maintenance helpers (issue 24, section 2). The arguments
only; what they run is in :mod:`nimbus.cmd.cli_host_run` (imported when
the command runs, so ``--help`` stays light).

docs/admin/host-maintenance.md tells the whole story.
"""

import argparse

from nimbus.cmd import cli_args

RUN = 'nimbus.cmd.cli_host_run:'

DRAIN = """\
Move every server off HOST for maintenance. First the compute service of
HOST is disabled with the reason "drain" (as `openstack compute service
set --disable --disable-reason drain`), so that nothing new lands there;
then ACTIVE and PAUSED servers are live migrated (os-migrateLive, host
chosen by the scheduler, block_migration auto) and SHUTOFF servers cold
migrated and confirmed; any other server is listed as skipped with the
reason. A bar shows the progress and a table the outcome (server, from,
to, result). The exit status is 1 if any server is still on HOST.
Ctrl-C stops waiting: the moves already asked for go on in the cloud.
The service stays disabled afterwards; enable it again with `openstack
compute service set --enable HOST nova-compute`."""

EVACUATE = """\
Rebuild every server of HOST, whose compute service is down, on other
hosts (the evacuate action, as `openstack server evacuate`). Refused
while the compute service of HOST is up: stop it, or mark it down with
`openstack compute service set --down HOST nova-compute`. ACTIVE,
SHUTOFF and ERROR servers are evacuated; any other is listed as skipped.
A bar shows the progress and a table the outcome; the exit status is 1 if
any server is still on HOST."""

DRY_RUN = (
    'change nothing: show where the scheduler would put each server and '
    'why (the chosen host, the alternates, and for a server that fits '
    'nowhere the filter that refused each host); nothing is claimed'
)


def _common(parser):
    parser.add_argument('host', metavar='HOST', help='the compute host')
    parser.add_argument('--dry-run', action='store_true', help=DRY_RUN)
    parser.add_argument(
        '--yes', '-y', action='store_true', help='do not ask for confirmation'
    )
    parser.add_argument(
        '--timeout',
        type=cli_args.positive_int,
        default=600,
        metavar='SECONDS',
        help='how long to wait for each server (default 600)',
    )


def _command(actions, client, name, summary, description):
    """``nimbus host NAME``, with the arguments both commands take; it
    runs ``cli_host_run.NAME``."""
    parser = actions.add_parser(
        name,
        parents=[client],
        help=summary,
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(parser)
    parser.set_defaults(func=RUN + name)
    return parser


def _parallel(parser, what):
    parser.add_argument(
        '--parallel',
        type=cli_args.positive_int,
        default=2,
        metavar='N',
        help='%s under way at once (default 2)' % what,
    )


def register(sub, client):
    """Add ``nimbus host drain|evacuate`` to the ``nimbus`` subparsers;
    ``client``: the parent parser of the commands that talk to the APIs
    (``--url``, ``--config-file``, ``--format``...)."""
    host = sub.add_parser(
        'host', help='maintenance of a compute host: drain, evacuate'
    )
    actions = host.add_subparsers(dest='host_command', required=True)
    drain = _command(
        actions,
        client,
        'drain',
        'disable a host and move every server off it',
        DRAIN,
    )
    _parallel(drain, 'moves')
    evacuate = _command(
        actions,
        client,
        'evacuate',
        'rebuild every server of a down host elsewhere',
        EVACUATE,
    )
    evacuate.add_argument(
        '--target-host',
        metavar='H',
        help='evacuate to this host (the filters still judge it)',
    )
    _parallel(evacuate, 'evacuations')
