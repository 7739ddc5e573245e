"""The per-group build locks of the late group check: one lock per group
while builds of it are in flight, none kept after."""

import threading

from nimbus.compute import group_check


def test_distinct_groups_leave_no_lock_behind():
    for index in range(1000):
        with group_check.serialised('group-%d' % index):
            assert 'group-%d' % index in group_check._locks
    assert group_check._locks == {}


def test_no_group_takes_no_lock():
    with group_check.serialised(None):
        assert group_check._locks == {}


def test_one_group_is_serialised_and_then_forgotten():
    inside = threading.Event()
    release = threading.Event()
    order = []

    def first():
        with group_check.serialised('g'):
            order.append('first in')
            inside.set()
            release.wait(30)
            order.append('first out')

    def second():
        inside.wait(30)
        with group_check.serialised('g'):
            order.append('second in')

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    assert inside.wait(30)
    # the second waits on the first's lock: the entry counts both
    for _ in range(3000):
        if group_check._locks.get('g', [None, 0])[1] == 2:
            break
        threading.Event().wait(0.01)
    assert group_check._locks['g'][1] == 2
    assert order == ['first in']
    release.set()
    for thread in threads:
        thread.join(30)
    assert order == ['first in', 'first out', 'second in']
    assert group_check._locks == {}


def test_an_exception_inside_releases_the_entry():
    try:
        with group_check.serialised('g'):
            raise RuntimeError('spawn failed')
    except RuntimeError:
        pass
    assert group_check._locks == {}
    # and the lock is free again
    with group_check.serialised('g'):
        pass
