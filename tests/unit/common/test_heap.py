"""Heap trimming: the trimmer calls malloc_trim on its interval, measures
what went back, survives a failing trim, and does nothing without a
malloc_trim or at interval 0."""

import ctypes
import threading

from nimbus.common import config
from nimbus.common import heap


class Recorder:
    def __init__(self, fail=False):
        self.pads = []
        self.called = threading.Event()
        self.fail = fail

    def __call__(self, pad):
        self.pads.append(pad)
        self.called.set()
        if self.fail:
            raise OSError('trim broke')
        return 1


def test_the_option_is_registered_with_every_nimbus_option():
    conf = config.build_conf([])
    assert conf.heap_trim_interval == 60
    conf = config.build_conf(
        [], overrides={'DEFAULT': {'heap_trim_interval': 0}}
    )
    assert conf.heap_trim_interval == 0


def test_trims_on_its_interval_from_a_daemon_thread():
    recorder = Recorder()
    trimmer = heap.HeapTrimmer(0.01, trim_function=recorder).start()
    try:
        assert recorder.called.wait(10)
    finally:
        trimmer.stop()
    assert recorder.pads[0] == 0  # pad 0: every whole free page goes back
    assert trimmer.trims >= 1
    assert trimmer._thread is None


def test_a_failing_trim_is_logged_and_the_thread_goes_on():
    recorder = Recorder(fail=True)
    trimmer = heap.HeapTrimmer(0.01, trim_function=recorder).start()
    try:
        for _ in range(200):
            if len(recorder.pads) >= 2:
                break
            recorder.called.clear()
            recorder.called.wait(1)
    finally:
        trimmer.stop()
    assert len(recorder.pads) >= 2


def test_interval_zero_starts_nothing():
    recorder = Recorder()
    trimmer = heap.HeapTrimmer(0, trim_function=recorder).start()
    assert trimmer._thread is None
    assert recorder.pads == []


def test_without_malloc_trim_it_does_nothing(monkeypatch):
    monkeypatch.setattr(heap, '_libc_trim', lambda: None)
    trimmer = heap.HeapTrimmer(0.01).start()
    assert not trimmer.available
    assert trimmer._thread is None
    assert trimmer.trim() == 0


def test_glibc_gives_freed_memory_back():
    """On this machine's glibc: memory freed in the middle of the heap
    (kept from the top by a live block above it) leaves the resident size
    only through malloc_trim."""
    trimmer = heap.HeapTrimmer(60)
    if not trimmer.available:
        import pytest

        pytest.skip('no malloc_trim in this C library')
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    # 64 MiB in 64 KiB chunks (below mmap's threshold); every other one
    # is freed, so that the freed ones cannot merge with each other or
    # with the top of the heap, which free() would give back on its own.
    size = 64 * 1024
    blocks = []
    for _ in range(1024):
        block = libc.malloc(size)
        ctypes.memset(block, 1, size)
        blocks.append(block)
    for block in blocks[::2]:
        libc.free(block)
    before = heap.resident_bytes()
    freed = trimmer.trim()
    for block in blocks[1::2]:
        libc.free(block)
    assert before is not None
    assert freed > 16 * 1024 * 1024  # of the 32 MiB freed
