"""nimbus.common.cells: queries on cells within a deadline."""

import threading
import time

import pytest

from nimbus.common import cells
from nimbus.db.cells import Cell


def _cell(n):
    return Cell(n, 'uuid-%d' % n, 'cell%d' % n, 'inproc://', 'sqlite://')


@pytest.fixture
def gate():
    """An event the hung queries wait on; set at teardown so that no
    thread outlives the test."""
    event = threading.Event()
    yield event
    event.set()


def test_answers_errors_and_silence(gate):
    queries = cells.CellQueries(timeout=0.2)
    ok, broken, hung = _cell(1), _cell(2), _cell(3)

    def fn(cell):
        if cell is broken:
            raise RuntimeError('no such table: instances\nSQL: ...')
        if cell is hung:
            gate.wait()
        return cell.name

    answers, down = queries.gather([ok, broken, hung], fn)
    assert answers == {ok: 'cell1'}
    assert down[broken] == 'RuntimeError: no such table: instances'
    assert down[hung] == 'no answer within 0.2 s'
    with pytest.raises(cells.CellDown) as info:
        queries.call(hung, fn)
    assert info.value.cell is hung
    assert queries.call(ok, fn) == 'cell1'


def test_a_hung_cell_holds_a_bounded_number_of_threads(gate):
    queries = cells.CellQueries(timeout=0.05)
    hung = _cell(1)
    started = []

    def fn(cell):
        started.append(cell)
        gate.wait()

    for _ in range(10):
        _answers, down = queries.gather([hung], fn)
        assert hung in down
    # Two queries went out; every later request found it overdue and
    # did not ask again.
    assert len(started) == cells.MAX_IN_FLIGHT
    assert queries.in_flight(hung) == cells.MAX_IN_FLIGHT
    assert 'an earlier query' in down[hung]
    gate.set()
    for _ in range(100):
        if not queries.in_flight(hung):
            break
        time.sleep(0.05)
    assert queries.in_flight(hung) == 0
    # Once they returned the cell is asked again.
    answers, down = queries.gather([hung], lambda cell: 'back')
    assert answers == {hung: 'back'} and not down


def test_slow_but_answering_queries_of_several_requests_run_side_by_side():
    queries = cells.CellQueries(timeout=30)
    cell = _cell(1)
    barrier = threading.Barrier(3)
    results = []

    def request():
        # The three queries meet at the barrier: they ran at once.
        results.append(queries.call(cell, lambda c: barrier.wait(10)))

    threads = [threading.Thread(target=request) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(results) == [0, 1, 2]


def test_direct_has_the_same_interface():
    direct = cells.Direct()
    one, two = _cell(1), _cell(2)

    def fn(cell):
        if cell is two:
            raise OSError('gone')
        return 1

    assert direct.gather([one, two], fn) == ({one: 1}, {two: 'gone'})
    with pytest.raises(cells.CellDown):
        direct.call(two, fn)
