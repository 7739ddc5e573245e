"""nimbus.common.service.Periodic (futurist's periodic worker): the first
run after ``first`` seconds, then one per ``interval`` after the previous
ended; a failing run is logged and the next still comes; stop ends it,
also before the first run."""

import logging
import threading

from nimbus.common import service


def _counter(target, fail_first=0):
    calls = []
    done = threading.Event()

    def func():
        calls.append(len(calls))
        if len(calls) >= target:
            done.set()
        if len(calls) <= fail_first:
            raise RuntimeError('boom %d' % len(calls))

    return func, calls, done


def test_runs_repeatedly_and_stops():
    func, calls, done = _counter(3)
    periodic = service.Periodic(0.01, func, name='tick-test', first=0).start()
    try:
        assert done.wait(10)
    finally:
        periodic.stop()
    periodic._thread.join(10)
    assert not periodic._thread.is_alive()
    count = len(calls)
    assert not threading.Event().wait(0.1)
    assert len(calls) == count  # nothing after stop
    assert periodic.name == 'tick-test'
    assert periodic.runs['runs'] == count


def test_a_failing_run_is_logged_and_the_next_one_comes(caplog):
    func, calls, done = _counter(3, fail_first=2)
    with caplog.at_level(logging.ERROR, 'nimbus.common.service'):
        periodic = service.Periodic(0.01, func, name='flaky', first=0).start()
        try:
            assert done.wait(10)
        finally:
            periodic.stop()
    assert len(calls) >= 3
    failed = [
        r for r in caplog.records if 'Periodic task flaky failed' in r.message
    ]
    assert len(failed) == 2
    assert periodic.runs['failures'] == 2


def test_the_first_run_waits_for_first_and_stop_before_it_ends_it():
    func, calls, _done = _counter(1)
    periodic = service.Periodic(0.01, func, first=30).start()
    assert not threading.Event().wait(0.2)
    assert calls == []
    assert periodic.runs is None  # not started yet
    periodic.stop()
    periodic._thread.join(10)
    assert not periodic._thread.is_alive()
    assert calls == []


def test_default_first_is_one_interval():
    func, calls, done = _counter(1)
    periodic = service.Periodic(0.3, func)
    assert periodic.first == 0.3
    periodic.start()
    try:
        assert not threading.Event().wait(0.1) and calls == []
        assert done.wait(10)
    finally:
        periodic.stop()
