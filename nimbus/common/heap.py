"""Giving the C heap's free memory back to the operating system.

A long-running daemon frees what it allocates (its Python objects and its
``malloc`` bytes in use stay flat), yet glibc keeps the freed chunks in
its arenas, and a heap fragmented by many threads returns little of them
on its own: the process's RSS creeps up while the memory it uses does
not. ``malloc_trim(0)`` gives back every whole free page of every arena
(``madvise(MADV_DONTNEED)``; glibc 2.8 and later).

With ``[DEFAULT] heap_trim_interval`` above 0 each daemon trims its heap
that often, from one daemon thread. On a C library without
``malloc_trim`` (musl, macOS) it does nothing and says so once, at
DEBUG. :class:`HeapTrimmer` is the library object; :func:`setup` is what
the daemons call with their conf.
"""

import ctypes
import ctypes.util
import os
import threading

from oslo_config import cfg
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

OPTS = [
    cfg.IntOpt(
        'heap_trim_interval',
        default=60,
        min=0,
        help="Seconds between returning the C heap's free pages to the "
        'operating system (glibc malloc_trim). Without it, memory a '
        'daemon freed stays in its resident size. 0 turns it off.',
    )
]


def register_opts(conf):
    conf.register_opts(OPTS)


def list_opts():
    return [('DEFAULT', OPTS)]


def _libc_trim():
    """glibc's ``malloc_trim``, or None where the C library has none."""
    name = ctypes.util.find_library('c')
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim
    except (OSError, AttributeError, TypeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def resident_bytes():
    """This process's resident set size in bytes (None off Linux)."""
    try:
        with open('/proc/self/statm') as f:
            return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
    except (OSError, ValueError, IndexError):
        return None


class HeapTrimmer:
    """Trims the C heap every ``interval`` seconds from a daemon thread.

    ``trim_function``: takes the pad in bytes and returns non-zero when
    memory went back (glibc's ``malloc_trim``, the default; None where
    there is none)."""

    def __init__(self, interval, trim_function=None, log=None):
        self.interval = interval
        self._trim = (
            trim_function if trim_function is not None else _libc_trim()
        )
        self.log = log or LOG
        self.trims = 0
        self.released = 0  # bytes of RSS the trims gave back, as measured
        self._halt = threading.Event()
        self._thread = None

    @property
    def available(self):
        return self._trim is not None

    def trim(self):
        """One trim; the bytes of RSS it gave back (0 when none)."""
        if self._trim is None:
            return 0
        before = resident_bytes()
        self._trim(0)
        after = resident_bytes()
        self.trims += 1
        freed = max(0, before - after) if before and after else 0
        self.released += freed
        self.log.debug(
            'Heap trim %d gave back %d KiB (%d KiB in all)',
            self.trims,
            freed // 1024,
            self.released // 1024,
        )
        return freed

    def start(self):
        if not self.interval or self._thread is not None:
            return self
        if self._trim is None:
            self.log.debug('No malloc_trim in this C library; not trimming')
            return self
        self._thread = threading.Thread(
            target=self._run, name='heap-trim', daemon=True
        )
        self._thread.start()
        return self

    def stop(self):
        self._halt.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def _run(self):
        while not self._halt.wait(self.interval):
            try:
                self.trim()
            except Exception:  # never take the daemon down for this
                self.log.exception('Heap trim failed')


def setup(conf):
    """Start trimming for a daemon with ``conf`` (a no-op at interval 0);
    returns the trimmer."""
    register_opts(conf)
    return HeapTrimmer(conf.heap_trim_interval).start()
