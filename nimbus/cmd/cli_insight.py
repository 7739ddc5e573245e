"""``nimbus decisions`` and ``nimbus capacity``: the operator's view of the
scheduler.

    nimbus decisions --follow [--transport-url URL] [--host H]...
                     [--flavor F]... [--outcome scheduled|partial|failed]...
                     [--count N] [--format line|json]
    nimbus capacity --flavor F [--flavor G]... [--availability-zone Z]
                    [--group UUID] [--by host|aggregate|zone|cell]
                    [--top N] [--format table|json] [--url URL]

Registered in ``nimbus.cmd.cli`` by :func:`register`.
"""

import datetime
import json
import os
import queue
import sys

from nimbus.cmd import cli_conf

OUTCOMES = ('scheduled', 'partial', 'failed')


def format_line(payload):
    """One decision as one line of text."""
    flavor = (payload.get('flavor') or {}).get('name') or '?'
    counts = ' '.join(
        '%s:%d' % (f['name'], f['out']) for f in payload.get('filters') or ()
    )
    hosts = []
    for inst in payload.get('instances') or ():
        if inst.get('host'):
            weight = inst.get('weight')
            hosts.append(
                '%s(%s)'
                % (inst['host'], 'n/a' if weight is None else '%.3f' % weight)
            )
    timings = payload.get('timings_ms') or {}
    text = '%s %-9s %s x%s placement:%s %s -> %s claim_retries=%s %.1fms' % (
        payload.get('request_id'),
        payload.get('outcome'),
        flavor,
        payload.get('num_instances'),
        payload.get('placement_candidates'),
        counts or '-',
        ', '.join(hosts) or '-',
        (payload.get('claim') or {}).get('retries', 0),
        timings.get('total', 0.0),
    )
    if payload.get('message'):
        text += ' | ' + payload['message'][:200]
    return text


def device_groups(request_groups):
    """The device-profile groups of a decision's placement query (its
    suffixed groups: ``resources_<suffix>``, ``required_<suffix>``) in the
    device-profile format a simulator trace takes."""
    query = request_groups or {}
    out = []
    for key in sorted(query):
        if not key.startswith('resources_'):
            continue
        suffix = key[len('resources') :]
        group = {}
        for part in str(query[key]).split(','):
            rc, _, amount = part.partition(':')
            group['resources:' + rc] = amount
        for trait in str(query.get('required' + suffix) or '').split(','):
            if trait:
                group['trait:' + trait.lstrip('!')] = (
                    'forbidden' if trait.startswith('!') else 'required'
                )
        out.append(group)
    return out


class TraceRecorder:
    """Turns decisions into a simulator trace (``nimbus simulate --trace``):
    one arrival per requested instance, ``t`` in seconds since the first
    decision, lifetimes unknown (null: they stay), accelerator requests as
    ``device_groups``."""

    def __init__(self, out):
        self.out = out
        self.start = None

    def record(self, payload, now=None):
        import time

        now = time.monotonic() if now is None else now
        if self.start is None:
            self.start = now
        flavor = (payload.get('flavor') or {}).get('name')
        for _ in range(int(payload.get('num_instances') or 1)):
            item = {
                't': round(now - self.start, 3),
                'flavor': flavor,
                'lifetime': None,
            }
            if payload.get('instance_group'):
                item['group'] = payload.get('request_id')
                item['policy'] = payload['instance_group']
            groups = device_groups(payload.get('request_groups'))
            if groups:
                item['device_groups'] = groups
            self.out.write(json.dumps(item, sort_keys=True) + '\n')
        self.out.flush()


def follow(
    transport,
    out,
    hosts=(),
    flavors=(),
    outcomes=(),
    count=None,
    fmt='line',
    timeout=None,
    pool=None,
    backlog=False,
    ready=None,
    recorder=None,
):
    """Print matching decisions to ``out`` as they arrive; returns how many
    were printed (after ``count`` of them, or ``timeout`` seconds without
    one, it stops). Decisions emitted before the tail started (waiting in
    the queue) are skipped unless ``backlog``. ``pool``: a queue of its own
    (see :func:`nimbus.scheduler.notifications.listen`). ``ready``: an
    Event set once the tail listens."""
    from nimbus.scheduler import notifications

    got = queue.Queue()
    since = (
        None
        if backlog
        else datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    )
    listener = notifications.listen(
        transport,
        got.put,
        hosts=hosts,
        flavors=flavors,
        outcomes=outcomes,
        pool=pool,
        since=since,
    )
    if ready is not None:
        ready.set()
    printed = 0
    try:
        while count is None or printed < count:
            try:
                payload = got.get(timeout=timeout or 1.0)
            except queue.Empty:
                if timeout:
                    break
                continue
            if recorder is not None:
                recorder.record(payload)
            out.write(
                (
                    json.dumps(payload, sort_keys=True)
                    if fmt == 'json'
                    else format_line(payload)
                )
                + '\n'
            )
            out.flush()
            printed += 1
    finally:
        listener.stop()
        listener.wait()
    return printed


def _decisions(args):
    if not args.follow:
        sys.exit(
            'nimbus decisions: the stream is live; use --follow '
            '(past decisions: GET /os-scheduler/records)'
        )
    import oslo_messaging as messaging
    from nimbus.cmd import cli_conf
    from nimbus.common import rpc

    # args.conf: the messaging options with the daemons' defaults (a
    # durable 'nimbus' exchange), and the config files' values (cli.main).
    conf = args.conf
    url = cli_conf.resolve(
        args.transport_url,
        cli_conf.transport_url(conf),
        'NIMBUS_TRANSPORT_URL',
        None,
    )
    if not url:
        sys.exit(
            'nimbus decisions: give --transport-url, --config-file (its '
            '[DEFAULT] transport_url) or $NIMBUS_TRANSPORT_URL: the '
            "scheduler's bus, e.g. rabbit://USER:PASS@HOST:5672/VHOST"
        )
    try:
        rpc.bus_of(url)
    except ValueError as exc:
        sys.exit('nimbus decisions: %s' % exc)
    transport = messaging.get_notification_transport(conf, url=url)
    record = open(args.record, 'w') if args.record else None
    try:
        follow(
            transport,
            sys.stdout,
            hosts=args.host,
            flavors=args.flavor,
            outcomes=args.outcome,
            count=args.count,
            fmt=args.format,
            pool=args.pool,
            backlog=args.backlog,
            recorder=TraceRecorder(record) if record else None,
        )
    except KeyboardInterrupt:
        pass
    finally:
        transport.cleanup()
        if record is not None:
            record.close()
    return 0


def render_capacity(answers, by='host', top=20, out=None):
    """Capacity answers as plain text tables."""
    out = out or sys.stdout
    keys = {
        'aggregate': 'per_aggregate',
        'zone': 'per_availability_zone',
        'cell': 'per_cell',
    }
    for answer in answers:
        flavor = answer.get('flavor') or {}
        out.write(
            '%s (%s): %d more fit on %d hosts (%d from placement, %d '
            'pass the filters); runs out first: %s\n'
            % (
                flavor.get('name'),
                flavor.get('id'),
                answer['total'],
                answer['hosts_with_room'],
                answer['placement_candidates'],
                answer['passing_filters'],
                answer.get('runs_out_first') or '-',
            )
        )
        if answer.get('message'):
            out.write('  %s\n' % answer['message'])
        if by == 'host':
            rows = [
                (
                    r['host'],
                    r['fits'],
                    r['limited_by'] or '-',
                    r['availability_zone'] or '-',
                )
                for r in (answer.get('hosts') or [])[:top]
            ]
            header = ('host', 'fits', 'limited by', 'zone')
        else:
            table = answer.get(keys[by]) or {}
            rows = [
                (k or '-', v, '', '')
                for k, v in sorted(table.items(), key=lambda kv: -kv[1])[:top]
            ]
            header = (by, 'fits', '', '')
        if rows:
            width = max(len(str(r[0])) for r in rows + [header])
            out.write('  %-*s %8s  %-22s %s\n' % ((width,) + header))
            for row in rows:
                out.write('  %-*s %8d  %-22s %s\n' % ((width,) + row))
        limited = answer.get('limited_by') or {}
        if limited:
            out.write(
                '  hosts limited by: %s\n'
                % ', '.join(
                    '%s %d' % (k or '-', v)
                    for k, v in sorted(limited.items(), key=lambda kv: -kv[1])
                )
            )
    return 0


def _capacity(args):
    from urllib.parse import urlencode

    client = cli_conf.compute_client(args)
    params = [('flavor', f) for f in args.flavor]
    for key, value in (
        ('availability_zone', args.availability_zone),
        ('group', args.group),
    ):
        if value:
            params.append((key, value))
    if args.by != 'host' and args.format != 'json':
        params.append(('hosts', 'false'))
    try:
        answers = client.get('/os-scheduler/capacity?' + urlencode(params))[
            'capacity'
        ]
    except RuntimeError as exc:
        sys.exit(str(exc))
    if args.format == 'json':
        print(json.dumps(answers, indent=2, sort_keys=True))
        return 0
    return render_capacity(answers, args.by, args.top)


def register(sub):
    """Add this module's commands to the ``nimbus`` subparsers."""
    dec = sub.add_parser(
        'decisions',
        help="tail the scheduler's decision stream (notifications)",
    )
    dec.add_argument(
        '--follow',
        '-f',
        action='store_true',
        help='print decisions as they happen',
    )
    dec.add_argument(
        '--transport-url',
        help="the scheduler's bus (default: the config files' "
        '[rpc]/[DEFAULT] transport_url, then $NIMBUS_TRANSPORT_URL)',
    )
    cli_conf.add_option(dec)
    dec.add_argument(
        '--host',
        action='append',
        default=[],
        help='only decisions that chose this host (repeat)',
    )
    dec.add_argument(
        '--flavor',
        action='append',
        default=[],
        help='only this flavor, by name or id (repeat)',
    )
    dec.add_argument(
        '--outcome',
        action='append',
        default=[],
        choices=OUTCOMES,
        help='only this outcome (repeat)',
    )
    dec.add_argument(
        '--count', type=int, default=None, help='exit after N decisions'
    )
    dec.add_argument('--format', choices=['line', 'json'], default='line')
    dec.add_argument(
        '--record',
        metavar='FILE',
        help='also write the decisions as a simulator trace '
        '(nimbus simulate --trace FILE)',
    )
    dec.add_argument(
        '--backlog',
        action='store_true',
        help='also print decisions waiting in the queue from '
        'before the tail started',
    )
    dec.add_argument(
        '--pool',
        default=None,
        help='consume from a queue of this name of its own, so '
        'that several tails each see every decision (the '
        'queue stays on the broker after the tail ends); '
        'default: the shared notifications queue',
    )
    dec.set_defaults(func=_decisions, needs_bus=True)

    cap = sub.add_parser(
        'capacity',
        help='how many more of a flavor fit, and where (claims nothing)',
    )
    cap.add_argument(
        '--flavor',
        action='append',
        required=True,
        help='flavor id or name (repeat)',
    )
    cap.add_argument('--availability-zone')
    cap.add_argument('--group', help='server group uuid (its policy holds)')
    cap.add_argument(
        '--by', choices=['host', 'aggregate', 'zone', 'cell'], default='host'
    )
    cap.add_argument('--top', type=int, default=20)
    cap.add_argument('--format', choices=['table', 'json'], default='table')
    cap.add_argument(
        '--url',
        help='compute API URL (default: the config files, '
        '$NIMBUS_API_URL, %s)' % cli_conf.DEFAULT_API_URL,
    )
    cli_conf.add_option(cap)
    cap.add_argument('--user', default=os.environ.get('NIMBUS_USER', 'admin'))
    cap.add_argument(
        '--project', default=os.environ.get('NIMBUS_PROJECT', 'admin')
    )
    cap.add_argument(
        '--roles', default=os.environ.get('NIMBUS_ROLES', 'admin')
    )
    cap.set_defaults(func=_capacity)
