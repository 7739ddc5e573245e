"""A cell conductor's hot handlers hold at most as many connections of
the cell database as its engine keeps (no overflow opened and closed
under a burst)."""

import threading
from unittest import mock

from nimbus.conductor import db_slots


def _db(size):
    db = mock.Mock()
    if size is None:
        db.engine.pool = object()
    else:
        db.engine.pool.size.return_value = size
    return db


def test_as_many_slots_as_kept_connections():
    slots = db_slots.for_database(_db(3))
    assert [slots.acquire(blocking=False) for _ in range(4)] == [
        True,
        True,
        True,
        False,
    ]
    for _ in range(3):
        slots.release()


def test_a_pool_that_does_not_say_its_size_gets_the_default():
    slots = db_slots.for_database(_db(None))
    taken = 0
    while slots.acquire(blocking=False):
        taken += 1
    assert taken == db_slots.DEFAULT


def test_handlers_beyond_the_slots_wait_their_turn():
    slots = db_slots.for_database(_db(2))
    inside, peak, lock = [0], [0], threading.Lock()
    go = threading.Event()

    def handler():
        go.wait(5)
        with slots:
            with lock:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=handler) for _ in range(8)]
    for thread in threads:
        thread.start()
    go.set()
    for thread in threads:
        thread.join(10)
    assert peak[0] <= 2
