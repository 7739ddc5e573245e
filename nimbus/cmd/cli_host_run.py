"""What ``nimbus host drain|evacuate`` run (the arguments are in
:mod:`nimbus.cmd.cli_host`; the API calls in
:mod:`nimbus.cmd.cli_host_moves`).

A run: find the host's compute service and servers; with ``--dry-run``
ask the scheduler where each would go and stop there; otherwise confirm
(unless ``--yes``), disable the host (drain) or check it is down
(evacuate), move the servers ``--parallel`` at a time under a progress
bar (on stderr), then print the summary table (or JSON with ``--format
json``) and exit 1 when a server is still on the host.
"""

import concurrent.futures
import dataclasses
import json
import sys
import threading

from rich.console import Console
from rich.progress import BarColumn
from rich.progress import MofNCompleteColumn
from rich.progress import Progress
from rich.progress import TextColumn
from rich.progress import TimeElapsedColumn

from nimbus.cmd import cli_conf
from nimbus.cmd import cli_host_moves as moves
from nimbus.cmd.cli_views import print_rows

INTERRUPTED_EXIT = 130


def _fail(args, message):
    sys.exit('nimbus host %s: %s' % (args.host_command, message))


def _items(args, client, table, what):
    try:
        svc = moves.service(client, args.host)
    except moves.HostError as exc:
        _fail(args, exc)
    return svc, moves.plan(moves.servers_on(client, args.host), table, what)


def _why(answer):
    """One line: why the scheduler chose the host, or why none fits."""
    if answer.get('host'):
        ranked = answer.get('ranked') or []
        best = ranked[0] if ranked else {}
        weighers = sorted(
            (
                (values.get('weighted') or 0.0, name.replace('Weigher', ''))
                for name, values in (best.get('weighers') or {}).items()
                if values.get('weighted')
            ),
            reverse=True,
        )[:3]
        return 'best of %d host(s) that passed the filters%s%s' % (
            len(ranked),
            ', weight %.3f' % best['weight'] if 'weight' in best else '',
            ' (%s)' % ', '.join('%s %.2f' % (n, w) for w, n in weighers)
            if weighers
            else '',
        )
    lines = [answer.get('message') or 'no host fits']
    for rejected in answer.get('rejected') or []:
        lines.append(
            '%s: %s (%s)'
            % (
                rejected.get('host'),
                rejected.get('filter'),
                rejected.get('reason') or '',
            )
        )
    return '\n'.join(lines)


def _dry_run(args, client, items, target=None, note=None):
    answers = {}
    for item in items:
        if item.move is not None:
            answers[item.uuid] = moves.dry_run(client, item, target)
    if args.format == 'json':
        print(
            json.dumps(
                {
                    'host': args.host,
                    'dry_run': True,
                    'note': note,
                    'servers': [
                        dict(
                            dataclasses.asdict(item),
                            scheduler=answers.get(item.uuid),
                        )
                        for item in items
                    ],
                },
                indent=2,
                sort_keys=True,
            )
        )
    else:
        rows = []
        for item in items:
            answer = answers.get(item.uuid) or {}
            rows.append(
                [
                    item.name or item.uuid,
                    item.status,
                    item.move or 'skip',
                    answer.get('host') or '-',
                    ', '.join(answer.get('alternates') or []) or '-',
                    _why(answer) if answer else item.reason,
                ]
            )
        print_rows(
            ['server', 'status', 'move', 'would go to', 'alternates', 'why'],
            rows,
        )
        if note:
            print(note)
        if len(answers) > 1:
            print(
                'Each server is answered as if it moved alone: the real '
                'moves, one after another, count the ones before.'
            )
        print('Dry run: nothing was changed or claimed.')
    stuck = [
        i
        for i in items
        if i.move is None or not (answers.get(i.uuid) or {}).get('host')
    ]
    return 1 if stuck else 0


def _confirm(args, prompt):
    if args.yes:
        return
    if not sys.stdin.isatty():
        _fail(args, 'not a terminal: pass --yes to go ahead')
    try:
        answer = input('%s [y/N] ' % prompt)
    except (KeyboardInterrupt, EOFError):
        answer = ''
    if answer.strip().lower() not in ('y', 'yes'):
        _fail(args, 'nothing done')


def _run(args, client, items, target=None):
    """Move the items ``--parallel`` at a time under a progress bar;
    True when every wait ended (False: Ctrl-C)."""
    todo = [i for i in items if i.move is not None]
    stop = threading.Event()
    mover = moves.Mover(client, args.host, stop, args.timeout, target)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=args.parallel)
    progress = Progress(
        TextColumn('{task.description}'),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=False,
    )
    try:
        with progress:
            bar = progress.add_task(
                '%s %s' % (args.host_command, args.host), total=len(todo)
            )
            futures = {pool.submit(mover, item): item for item in todo}
            pending = set(futures)
            while pending:
                done, pending = concurrent.futures.wait(
                    pending,
                    timeout=0.2,
                    return_when=concurrent.futures.FIRST_COMPLETED,
                )
                for future in done:
                    item = future.result()
                    progress.advance(bar)
                    progress.console.print(
                        '%s %s%s'
                        % (
                            item.name or item.uuid,
                            item.result,
                            ' to %s' % item.dest
                            if item.result == moves.MOVED
                            else ': %s' % item.reason,
                        )
                    )
    except KeyboardInterrupt:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        for item in todo:
            if not item.result or item.result == moves.NOT_STARTED:
                item.result = (
                    moves.INTERRUPTED if item.asked else moves.NOT_STARTED
                )
        return False
    except BaseException:
        # The API cannot be reached any more (or a bug): the other waits
        # end too, and the moves asked for go on in the cloud.
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return True


def _summary(args, items, finished, left, extra=None):
    if args.format == 'json':
        print(
            json.dumps(
                dict(
                    {
                        'host': args.host,
                        'servers': [dataclasses.asdict(i) for i in items],
                        'left_on_host': left,
                        'interrupted': not finished,
                    },
                    **(extra or {}),
                ),
                indent=2,
                sort_keys=True,
            )
        )
    elif items:
        print_rows(
            ['server', 'from', 'to', 'result', 'detail'],
            [
                [
                    i.name or i.uuid,
                    args.host,
                    i.dest or '-',
                    i.result,
                    i.reason or '-',
                ]
                for i in items
            ],
        )
    else:
        print('No server on %s.' % args.host)
    out = sys.stderr if args.format == 'json' else sys.stdout
    if not finished:
        under_way = [
            i.name or i.uuid for i in items if i.result == moves.INTERRUPTED
        ]
        print(
            'Interrupted: the moves under way go on in the cloud (%s); '
            'the others were not started. Follow them with `nimbus '
            'servers` or `openstack server migration list --host %s`.'
            % (', '.join(under_way) or 'none', args.host),
            file=out,
        )
        return INTERRUPTED_EXIT
    if left:
        print(
            '%d server(s) still on %s: %s'
            % (len(left), args.host, ', '.join(left)),
            file=out,
        )
        return 1
    return 0


def _left(client, host):
    return [s.get('name') or s['id'] for s in moves.servers_on(client, host)]


def drain(args):
    client = cli_conf.compute_client(args)
    svc, items = _items(args, client, moves.DRAIN_MOVES, 'a drain')
    if args.dry_run:
        note = None
        if svc.get('status') != 'disabled':
            note = (
                'A real drain first disables the compute service of %s '
                '(reason "drain").' % args.host
            )
        return _dry_run(args, client, items, note=note)
    _confirm(
        args,
        'Disable the compute service of %s and move its %d server(s) '
        '(%d skipped)?'
        % (
            args.host,
            len([i for i in items if i.move]),
            len([i for i in items if not i.move]),
        ),
    )
    if svc.get('status') != 'disabled':
        moves.disable(client, svc, 'drain')
    finished = _run(args, client, items)
    left = _left(client, args.host) if finished else []
    return _summary(args, items, finished, left, {'service_disabled': True})


def evacuate(args):
    client = cli_conf.compute_client(args)
    svc, items = _items(args, client, moves.EVACUATE_MOVES, 'evacuate')
    up = not moves.is_down(svc)
    refusal = (
        'the compute service of %s is up; evacuate needs it down: stop '
        'it, or mark it with `openstack compute service set --down %s '
        'nova-compute` (only once it is really stopped)'
        % (args.host, args.host)
    )
    if args.dry_run:
        note = 'A real evacuate is refused now: %s.' % refusal if up else None
        return _dry_run(args, client, items, args.target_host, note)
    if up:
        _fail(args, refusal)
    if args.target_host == args.host:
        _fail(args, '--target-host is the host being evacuated')
    _confirm(
        args,
        'Rebuild the %d server(s) of %s on other hosts (%d skipped)?'
        % (
            len([i for i in items if i.move]),
            args.host,
            len([i for i in items if not i.move]),
        ),
    )
    finished = _run(args, client, items, args.target_host)
    left = _left(client, args.host) if finished else []
    return _summary(args, items, finished, left)
