"""The tracemalloc reports: the largest sites, what grew, the triggers."""

import collections
import logging
import os
import signal
import threading
import tracemalloc

import pytest

from nimbus.common import config
from nimbus.cmd import memtrace

HOARD = []


def _grow(blocks):
    # one allocation site: this line
    HOARD.extend(bytearray(4096) for _ in range(blocks))


@pytest.fixture
def trace():
    was_tracing = tracemalloc.is_tracing()
    made = memtrace.MemTrace(frames=3, top=10)
    yield made
    HOARD.clear()
    if not was_tracing:
        made.stop()


def _here(site):
    return any(
        frame.startswith('unit/common/test_memtrace.py:')
        or 'test_memtrace.py:' in frame
        for frame in site.frames
    )


def test_the_grown_site_is_named(trace):
    first = trace.report()
    assert first.number == 1 and first.grown == []
    assert first.traced_diff is None
    _grow(200)
    second = trace.report()
    assert second.traced_diff >= 200 * 4096
    top = second.grown[0]
    assert _here(top), second.text()
    assert (
        'test_memtrace.py:%d' % (_grow.__code__.co_firstlineno + 2)
        in (top.frames[0])
    )
    assert top.size_diff >= 200 * 4096 and top.count_diff >= 200
    text = second.text()
    assert second.overhead > 0 and 'the tracing itself' in text
    assert 'grown since report 1:' in text
    assert top.frames[0] in text.split('grown since report 1:')[1]
    # the largest sites of the same report hold it too
    assert any(_here(site) for site in second.largest)
    # and by caller: the test is no Nimbus code, so its innermost frame
    assert top.frames[0] in [site.frames[0] for site in second.callers]
    assert 'by Nimbus caller:' in text


def test_callers_are_the_innermost_nimbus_frame():
    frame = collections.namedtuple('frame', 'filename lineno')
    stack = [
        frame('/x/nimbus/scheduler/manager.py', 10),
        frame('/x/nimbus/scheduler/host_manager.py', 20),
        frame('/v/lib/python3.11/site-packages/sqlalchemy/orm/loading.py', 5),
    ]
    assert memtrace._caller(stack) == 'nimbus/scheduler/host_manager.py:20'
    assert memtrace._caller(stack[2:]) == 'sqlalchemy/orm/loading.py:5'


def test_nothing_grown_says_so(trace):
    trace.report()
    third = trace.report()
    assert all(not _here(site) for site in third.grown), third.text()
    if not third.grown:
        assert '(nothing grew)' in third.text()


def test_the_report_goes_to_the_log(trace, caplog):
    trace.log = logging.getLogger('nimbus.test.memtrace')
    with caplog.at_level(logging.INFO, logger='nimbus.test.memtrace'):
        trace.log_report()
        _grow(100)
        report = trace.log_report()
    assert report.number == 2
    messages = [r.getMessage() for r in caplog.records]
    assert messages[-1].startswith('tracemalloc report 2: Python heap ')
    assert report.grown[0].frames[0] in messages[-1]


def test_off_by_default():
    conf = config.build_conf()
    assert conf.tracemalloc_frames == 0
    assert memtrace.setup(conf) is None


def test_setup_from_the_conf_and_the_signal(caplog):
    if tracemalloc.is_tracing():
        pytest.skip('tracemalloc already on (pytest -X tracemalloc)')
    conf = config.build_conf(
        overrides={'DEFAULT': {'tracemalloc_frames': 2, 'tracemalloc_top': 5}}
    )
    previous = signal.getsignal(memtrace.SIGNAL)
    signal.signal(memtrace.SIGNAL, signal.SIG_DFL)
    done = threading.Event()
    try:
        with caplog.at_level(logging.INFO, logger='nimbus.cmd.memtrace'):
            trace = memtrace.setup(conf)
            assert trace is not None and tracemalloc.is_tracing()
            assert tracemalloc.get_traceback_limit() == 2
            original = trace.log_report

            def reported():
                original()
                done.set()

            trace.log_report = reported
            os.kill(os.getpid(), memtrace.SIGNAL)
            assert done.wait(30)
        text = [r.getMessage() for r in caplog.records]
        assert any('tracemalloc on (2 frames)' in m for m in text)
        assert any(m.startswith('tracemalloc report 1:') for m in text)
        # no more than tracemalloc_top sites
        report = trace.report()
        assert len(report.largest) <= 5
    finally:
        trace.stop()
        signal.signal(memtrace.SIGNAL, previous)
    assert not tracemalloc.is_tracing()
    assert signal.getsignal(memtrace.SIGNAL) == previous


def test_a_signal_someone_else_handles_is_left_alone(caplog):
    def theirs(signum, frame):
        pass

    previous = signal.signal(memtrace.SIGNAL, theirs)
    try:
        trace = memtrace.MemTrace(frames=1)
        with caplog.at_level(logging.WARNING, logger='nimbus.cmd.memtrace'):
            assert trace.on_signal() is False
        assert signal.getsignal(memtrace.SIGNAL) is theirs
        assert 'already has a handler' in caplog.text
    finally:
        signal.signal(memtrace.SIGNAL, previous)


def test_periodic_reports(trace):
    reports = []
    done = threading.Event()

    def counted():
        reports.append(trace.report())
        if len(reports) == 2:
            done.set()

    trace.log_report = counted
    trace.every(0.05)
    assert done.wait(30)
    trace._halt.set()
    assert [r.number for r in reports[:2]] == [1, 2]


def test_file_names_are_shortened_to_their_package():
    assert memtrace._short('/usr/lib/python3.11/json/decoder.py') == (
        'json/decoder.py'
    )
    assert memtrace._short(
        '/v/.venv/lib/python3.11/site-packages/kombu/connection.py'
    ) == ('kombu/connection.py')
    assert memtrace._short('/work/wt/x/nimbus/scheduler/host_state.py') == (
        'nimbus/scheduler/host_state.py'
    )
