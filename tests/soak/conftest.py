"""The soak test prints its table at the end of the run."""

REPORTS = []


def pytest_terminal_summary(terminalreporter):
    if not REPORTS:
        return
    terminalreporter.write_sep('=', 'soak')
    for report in REPORTS:
        terminalreporter.write_line(report)
