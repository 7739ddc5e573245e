"""The fault suite prints its table at the end of the run."""

ROWS = []
# One line per row that proves its fault struck.
EVIDENCE = []
# The move rows (tests/faults/test_move_faults.py), one line each.
MOVE_ROWS = []
MOVE_HEADER = (
    'move | killed | task when struck | server | migration '
    '| recover s | recovered by | after | row s'
)


def pytest_terminal_summary(terminalreporter):
    if MOVE_ROWS:
        terminalreporter.write_sep('=', 'move fault table')
        terminalreporter.write_line(MOVE_HEADER)
        for line in MOVE_ROWS:
            terminalreporter.write_line(line)
    if not ROWS:
        return
    from harness import faults

    terminalreporter.write_sep('=', 'fault table')
    terminalreporter.write_line(faults.table(ROWS))
    for row in ROWS:
        for answer, count in sorted(row.refusals.items()):
            terminalreporter.write_line(
                '%s: %d refused: %s' % (row.fault, count, answer)
            )
    for row in ROWS:
        for status, fault in row.probes:
            if status != 'ACTIVE':
                terminalreporter.write_line(
                    '%s: probe %s: %s'
                    % (row.fault, status, (fault or {}).get('message'))
                )
    for line in EVIDENCE:
        terminalreporter.write_line(line)
