"""Process-wide locks by key (a server group, an instance), each living
only while someone holds or waits for it: the map stays as small as the
work in flight instead of keeping a lock for every key ever seen."""

import contextlib
import threading


class KeyedLocks:
    def __init__(self):
        # key -> [lock, holders and waiters]
        self.entries = {}
        self._guard = threading.Lock()

    @contextlib.contextmanager
    def held(self, key):
        """Hold the lock of ``key`` (a no-op for a false key)."""
        if not key:
            yield
            return
        with self._guard:
            entry = self.entries.get(key)
            if entry is None:
                entry = self.entries[key] = [threading.Lock(), 0]
            entry[1] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._guard:
                entry[1] -= 1
                if not entry[1]:
                    del self.entries[key]
