"""Where a daemon's memory goes: tracemalloc snapshots written to the log.

With ``[DEFAULT] tracemalloc_frames`` above 0 a daemon starts
:mod:`tracemalloc` keeping that many frames per allocation, and then
writes a report to its log:

- every ``tracemalloc_interval`` seconds (0: never on its own), and
- on ``SIGUSR2`` (``kill -USR2 PID``), unless something else (oslo.reports'
  Guru Meditation, a WSGI server) already handles that signal.

A report is one log record: the Python heap tracemalloc sees (current and
peak), the ``tracemalloc_top`` allocation sites holding the most memory,
and the sites that grew most since the previous report. A site is the
allocation's stack, innermost frame first, shortened to the frames inside
Nimbus's callers (``file:line`` each).

Tracing costs CPU and memory (tens of percent); it is for finding a leak,
not for production. :class:`MemTrace` is the library object; :func:`setup`
is what the daemons call with their conf.
"""

import dataclasses
import linecache
import os
import re
import signal
import threading
import tracemalloc

from oslo_config import cfg
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

OPTS = [
    cfg.IntOpt(
        'tracemalloc_frames',
        default=0,
        min=0,
        max=100,
        help='Trace Python allocations with this many frames each '
        '(tracemalloc) and write reports of the largest and the growing '
        'allocation sites to the log, every tracemalloc_interval seconds '
        'and on SIGUSR2. 0 turns it off. Costs CPU and memory: for '
        'finding leaks.',
    ),
    cfg.IntOpt(
        'tracemalloc_interval',
        default=0,
        min=0,
        help='Seconds between tracemalloc reports in the log (0: only on '
        'SIGUSR2). Ignored while tracemalloc_frames is 0.',
    ),
    cfg.IntOpt(
        'tracemalloc_top',
        default=15,
        min=1,
        help='Allocation sites listed in each tracemalloc report (the '
        'largest, and the most grown since the previous report).',
    ),
]

# The signal that asks for a report now.
SIGNAL = signal.SIGUSR2

# Allocations made by the tracing itself are not the daemon's.
_OWN = (tracemalloc.__file__, __file__, linecache.__file__)


# register_opts and list_opts: the pair each option module has (the
# services and oslo-config-generator call them); alike by design.
def register_opts(conf):
    conf.register_opts(OPTS)


def list_opts():
    return [('DEFAULT', OPTS)]


@dataclasses.dataclass
class Site:
    """One allocation site of a report: its stack (innermost first, each
    ``file:line``), the bytes and blocks it holds, and their change since
    the previous report (``None`` in the first)."""

    frames: tuple
    size: int
    count: int
    size_diff: object = None
    count_diff: object = None

    def describe(self):
        where = ' < '.join(self.frames)
        if self.size_diff is None:
            return '%9.1f KiB %7d blocks  %s' % (
                self.size / 1024.0,
                self.count,
                where,
            )
        return '%+9.1f KiB %+7d blocks (now %.1f KiB)  %s' % (
            self.size_diff / 1024.0,
            self.count_diff,
            self.size / 1024.0,
            where,
        )


@dataclasses.dataclass
class Report:
    """What one snapshot says: the traced heap, the largest sites, and the
    sites grown since the previous snapshot (empty in the first)."""

    number: int
    traced: int
    peak: int
    largest: list
    grown: list
    traced_diff: object = None
    callers: list = dataclasses.field(default_factory=list)
    overhead: int = 0  # bytes tracemalloc uses for its own tables

    def text(self):
        lines = [
            'tracemalloc report %d: Python heap %.1f KiB traced (peak %.1f '
            'KiB; the tracing itself %.1f KiB)%s'
            % (
                self.number,
                self.traced / 1024.0,
                self.peak / 1024.0,
                self.overhead / 1024.0,
                ''
                if self.traced_diff is None
                else ', %+.1f KiB since report %d'
                % (self.traced_diff / 1024.0, self.number - 1),
            ),
            'largest sites:',
        ]
        lines.extend('  ' + site.describe() for site in self.largest)
        if self.traced_diff is not None:
            lines.append('grown since report %d:' % (self.number - 1))
            lines.extend('  ' + site.describe() for site in self.grown)
            if not self.grown:
                lines.append('  (nothing grew)')
            lines.append(
                'grown since report %d by Nimbus caller:' % (self.number - 1)
            )
            lines.extend('  ' + site.describe() for site in self.callers)
            if not self.callers:
                lines.append('  (nothing grew)')
        return '\n'.join(lines)


_LIBRARY = re.compile(
    r'.*[/\\]lib[/\\]python[0-9.]+[/\\](site-packages[/\\])?'
)


def _short(filename):
    # the path from the package root (nimbus/..., oslo_messaging/...,
    # json/... for the standard library)
    filename = _LIBRARY.sub('', filename)
    parts = filename.split(os.sep)
    if 'nimbus' in parts:
        parts = parts[len(parts) - 1 - parts[::-1].index('nimbus') :]
    return os.sep.join(parts[-4:])


def _caller(traceback):
    """The innermost frame of ``traceback`` in Nimbus's own code (the
    innermost frame when none is)."""
    for frame in reversed(traceback):
        name = frame.filename.replace(os.sep, '/')
        if '/nimbus/' in name and '/nimbus/cmd/memtrace' not in name:
            return '%s:%d' % (_short(frame.filename), frame.lineno)
    frame = traceback[-1]
    return '%s:%d' % (_short(frame.filename), frame.lineno)


def _by_caller(statistics):
    """``{caller: [bytes, blocks]}`` of a snapshot's ``statistics`` (one
    per traceback)."""
    totals = {}
    for stat in statistics:
        entry = totals.setdefault(_caller(stat.traceback), [0, 0])
        entry[0] += stat.size
        entry[1] += stat.count
    return totals


def _frames(traceback):
    # tracemalloc orders a traceback oldest frame first
    return tuple(
        '%s:%d' % (_short(f.filename), f.lineno) for f in reversed(traceback)
    )


class MemTrace:
    """Takes tracemalloc snapshots and reports the largest and the grown
    allocation sites. ``frames``: frames kept per allocation; ``top``:
    sites per list; ``log``: where :meth:`log_report` writes."""

    def __init__(self, frames=10, top=15, log=None):
        self.frames = frames
        self.top = top
        self.log = log or LOG
        self._previous = None
        self._previous_callers = None
        self._previous_traced = None
        self._number = 0
        self._lock = threading.Lock()
        self._periodic = None
        self._halt = threading.Event()
        self._old_handler = None

    # -- tracing ---------------------------------------------------------

    def start(self):
        if not tracemalloc.is_tracing():
            tracemalloc.start(self.frames)
        return self

    def stop(self):
        self._halt.set()
        if self._old_handler is not None:
            signal.signal(SIGNAL, self._old_handler)
            self._old_handler = None
        tracemalloc.stop()
        self._previous = None

    def _snapshot(self):
        snapshot = tracemalloc.take_snapshot()
        return snapshot.filter_traces(
            [tracemalloc.Filter(False, name) for name in _OWN]
        )

    def report(self):
        """A :class:`Report` of a snapshot taken now, compared with the
        previous call's (starts tracing if it is not on)."""
        self.start()
        key = 'traceback' if self.frames > 1 else 'lineno'
        with self._lock:
            snapshot = self._snapshot()
            traced, peak = tracemalloc.get_traced_memory()
            self._number += 1
            statistics = snapshot.statistics(key)
            largest = [
                Site(_frames(stat.traceback), stat.size, stat.count)
                for stat in statistics[: self.top]
            ]
            grown = []
            callers = []
            traced_diff = None
            by_caller = _by_caller(statistics)
            if self._previous is not None:
                before = self._previous_callers
                for caller, (size, count) in by_caller.items():
                    old_size, old_count = before.get(caller, (0, 0))
                    if size > old_size:
                        callers.append(
                            Site(
                                (caller,),
                                size,
                                count,
                                size - old_size,
                                count - old_count,
                            )
                        )
                callers.sort(key=lambda site: -site.size_diff)
                del callers[self.top :]
                traced_diff = traced - self._previous_traced
                diffs = snapshot.compare_to(self._previous, key)
                grown = [
                    Site(
                        _frames(stat.traceback),
                        stat.size,
                        stat.count,
                        stat.size_diff,
                        stat.count_diff,
                    )
                    for stat in diffs
                    if stat.size_diff > 0
                ][: self.top]
            self._previous = snapshot
            self._previous_callers = by_caller
            self._previous_traced = traced
            return Report(
                self._number,
                traced,
                peak,
                largest,
                grown,
                traced_diff,
                callers,
                tracemalloc.get_tracemalloc_memory(),
            )

    def log_report(self):
        try:
            report = self.report()
        except Exception:
            self.log.exception('tracemalloc report failed')
            return None
        self.log.info('%s', report.text())
        return report

    # -- triggers --------------------------------------------------------

    def every(self, interval):
        """Write a report every ``interval`` seconds from a daemon thread."""

        def loop():
            while not self._halt.wait(interval):
                self.log_report()

        self._periodic = threading.Thread(
            target=loop, daemon=True, name='tracemalloc-report'
        )
        self._periodic.start()
        return self._periodic

    def on_signal(self):
        """Write a report on :data:`SIGNAL`, if nothing else handles it
        already and this is the main thread; returns whether it will."""
        try:
            current = signal.getsignal(SIGNAL)
        except ValueError:
            return False
        if current not in (signal.SIG_DFL, None):
            self.log.warning(
                'Signal %s already has a handler; tracemalloc reports '
                'only every tracemalloc_interval seconds',
                SIGNAL.name,
            )
            return False

        def handler(signum, frame):
            # the report logs: not from inside a signal handler, which
            # may have interrupted a thread holding the logging lock
            threading.Thread(
                target=self.log_report, daemon=True, name='tracemalloc-dump'
            ).start()

        try:
            self._old_handler = signal.signal(SIGNAL, handler)
        except ValueError:  # not the main thread
            return False
        return True


def setup(conf):
    """Start tracing as ``conf`` says (``[DEFAULT] tracemalloc_*``);
    returns the :class:`MemTrace`, or None when it is off."""
    register_opts(conf)
    if not conf.tracemalloc_frames:
        return None
    trace = MemTrace(conf.tracemalloc_frames, conf.tracemalloc_top).start()
    signalled = trace.on_signal()
    if conf.tracemalloc_interval:
        trace.every(conf.tracemalloc_interval)
    LOG.info(
        'tracemalloc on (%d frames); reports every %s%s',
        conf.tracemalloc_frames,
        '%d s' % conf.tracemalloc_interval
        if conf.tracemalloc_interval
        else 'never',
        ' and on %s (pid %d)' % (SIGNAL.name, os.getpid())
        if signalled
        else '',
    )
    return trace
