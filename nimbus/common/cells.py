"""Asking the cells' databases within a deadline.

A cell whose database errors, or does not answer within ``timeout``
seconds, is *down* for the request that asked; the cells that answered
still count. Each query runs in a thread of its own, so the cells are
asked at once and a request waits for the slowest answer (at most
``timeout``), not for the sum of them.

A query that outlives its deadline keeps running until its driver gives
up (a lost database can hold a connection attempt or a read for minutes);
only its answer is dropped. While a cell has such an overdue query and
:data:`MAX_IN_FLIGHT` queries in flight, a request does not start another
one there: the cell is down for it at once. So a hung cell costs at most a
few threads, and the first query that returns lets the next request try
the cell again.
"""

import threading
import time

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

# Queries in flight on one cell above which a cell with an overdue query is
# not asked again (it is down for the request at once).
MAX_IN_FLIGHT = 2


class CellDown(Exception):
    """The cell's database erred or did not answer in time."""

    def __init__(self, cell, reason):
        super().__init__('%s: %s' % (cell.name, reason))
        self.cell = cell
        self.reason = reason


class _Call:
    """One query in its own thread; ``done`` is set when it returned."""

    def __init__(self, fn):
        self.done = threading.Event()
        self.started = time.monotonic()
        self.value = None
        self.error = None
        self._fn = fn

    def run(self):
        try:
            self.value = self._fn()
        except Exception as exc:  # noqa: BLE001 - reported as the cell being down
            self.error = exc
        finally:
            self.done.set()


class _OneCell:
    def call(self, cell, fn):
        """``fn(cell)`` (within the deadline, if any), or
        :class:`CellDown`."""
        answers, down = self.gather([cell], fn)
        if cell in down:
            raise CellDown(cell, down[cell])
        return answers[cell]


class CellQueries(_OneCell):
    """Runs queries on cells within ``timeout`` seconds each request.

    One instance per API process (its bookkeeping of overdue queries is
    what keeps a hung cell from taking a thread per request).
    """

    def __init__(self, timeout):
        self.timeout = timeout
        self._lock = threading.Lock()
        self._in_flight = {}  # cell uuid -> [_Call]

    def _overloaded(self, cell, now):
        calls = self._in_flight.get(cell.uuid, ())
        overdue = any(now - c.started > self.timeout for c in calls)
        return overdue and len(calls) >= MAX_IN_FLIGHT

    def _start(self, cell, fn):
        call = _Call(fn)
        with self._lock:
            if self._overloaded(cell, call.started):
                return None
            self._in_flight.setdefault(cell.uuid, []).append(call)

        def run():
            try:
                call.run()
            finally:
                with self._lock:
                    calls = self._in_flight.get(cell.uuid, [])
                    if call in calls:
                        calls.remove(call)
                    if not calls:
                        self._in_flight.pop(cell.uuid, None)

        threading.Thread(
            target=run, name='cell-query-%s' % cell.name, daemon=True
        ).start()
        return call

    def in_flight(self, cell):
        """Queries started on ``cell`` that have not returned yet."""
        with self._lock:
            return len(self._in_flight.get(cell.uuid, ()))

    def gather(self, cells, fn):
        """Call ``fn(cell)`` for every cell at once.

        Returns ``(answers, down)``: ``{cell: value}`` of the cells that
        answered in time, and ``{cell: reason}`` of the others (a short
        sentence: the error, or that it did not answer in time).
        """
        cells = list(cells)
        calls, down = {}, {}
        for cell in cells:
            call = self._start(cell, lambda cell=cell: fn(cell))
            if call is None:
                down[cell] = (
                    'an earlier query has not answered for more than '
                    '%s s' % self.timeout
                )
            else:
                calls[cell] = call
        deadline = time.monotonic() + self.timeout
        answers = {}
        for cell, call in calls.items():
            if not call.done.wait(max(0.0, deadline - time.monotonic())):
                down[cell] = 'no answer within %s s' % self.timeout
            elif call.error is not None:
                down[cell] = '%s: %s' % (
                    type(call.error).__name__,
                    str(call.error).splitlines()[0][:200]
                    if str(call.error)
                    else '',
                )
            else:
                answers[cell] = call.value
        for cell, reason in down.items():
            LOG.warning(
                'Cell %s is down for this request: %s', cell.name, reason
            )
        return answers, down


class Direct(_OneCell):
    """The same interface without threads or deadline (tools, tests)."""

    timeout = None

    def gather(self, cells, fn):
        answers, down = {}, {}
        for cell in cells:
            try:
                answers[cell] = fn(cell)
            except Exception as exc:  # noqa: BLE001 - any failure marks the cell down
                LOG.warning('Cell %s is down: %s', cell.name, exc)
                down[cell] = str(exc)
        return answers, down
