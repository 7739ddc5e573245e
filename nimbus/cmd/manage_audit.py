"""``nimbus-manage audit``: where cells, the API database, placement and
the accelerator service disagree (see :mod:`nimbus.conductor.audit`).

    nimbus-manage --config-file F audit [--json] [--heal]
        [--stuck-after SECONDS] [--grace SECONDS]

Exit status: 0 when every record agrees (or ``--heal`` repaired every
disagreement found), 1 when disagreements remain, 2 when a source could
not be read.
"""

import logging
import sys

import orjson

from nimbus.common import context
from nimbus.common import secrets
from nimbus.conductor import audit
from nimbus import services

COLUMNS = ('KIND', 'UUID', 'WHERE', 'STATE', 'DETAIL')


def add_parser(subparsers):
    parser = subparsers.add_parser(
        'audit',
        help='List the disagreements between cells, build '
        'requests, instance mappings, placement and ARQs.',
    )
    parser.add_argument(
        '--json',
        dest='audit_json',
        action='store_true',
        help='Print the report as JSON.',
    )
    parser.add_argument(
        '--heal',
        dest='audit_heal',
        action='store_true',
        help='Repair the safe kinds: %s.' % ', '.join(sorted(audit.HEALABLE)),
    )
    parser.add_argument(
        '--stuck-after',
        dest='audit_stuck_after',
        type=int,
        help='Seconds in BUILD or DELETING before an '
        'instance counts as stuck (default [conductor]'
        ' audit_stuck_after).',
    )
    parser.add_argument(
        '--grace',
        dest='audit_grace',
        type=int,
        help='Seconds before a two-step write counts as a '
        'disagreement (default [conductor] '
        'audit_grace).',
    )
    parser.set_defaults(func=run)


def _state(item):
    if item.healed:
        return 'healed'
    if item.heal_error:
        return 'not healed: %s' % item.heal_error
    return 'healable' if item.healable else 'report only'


def render_table(report):
    """The report as a plain text table and a summary line."""
    rows = [
        (d.kind, d.uuid or '-', d.where, _state(d), d.detail)
        for d in report.disagreements
    ]
    lines = []
    if rows:
        widths = [
            max(len(str(r[i])) for r in rows + [COLUMNS])
            for i in range(len(COLUMNS) - 1)
        ]
        fmt = '  '.join('%%-%ds' % w for w in widths) + '  %s'
        lines.append(fmt % COLUMNS)
        lines.extend(fmt % row for row in rows)
    lines.append(report.summary())
    return '\n'.join(lines)


def _logs_to_stderr():
    """Without a log file oslo.log writes to stdout; the report owns
    stdout (``--json`` must parse), so log lines go to stderr."""
    for handler in logging.getLogger().handlers:
        if getattr(handler, 'stream', None) is sys.stdout:
            handler.setStream(sys.stderr)


def run(conf):
    args = conf.category
    _logs_to_stderr()
    checker = services.auditor(conf)
    if args.audit_stuck_after is not None:
        checker.stuck_after = args.audit_stuck_after
    if args.audit_grace is not None:
        checker.grace = args.audit_grace
    ctxt = context.get_admin_context()
    try:
        report = checker.run(ctxt)
        if args.audit_heal:
            checker.heal(ctxt, report)
    except audit.AuditError as exc:
        print(secrets.mask('nimbus-manage audit: %s' % exc), file=sys.stderr)
        sys.exit(2)
    if args.audit_json:
        print(
            orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2).decode()
        )
    else:
        print(render_table(report))
    sys.exit(1 if report.remaining else 0)
