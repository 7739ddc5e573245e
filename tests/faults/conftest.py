"""The fault suite prints its table at the end of the run."""

ROWS = []


def pytest_terminal_summary(terminalreporter):
    if not ROWS:
        return
    from nimbus.testing import faults

    terminalreporter.write_sep('=', 'fault table')
    terminalreporter.write_line(faults.table(ROWS))
