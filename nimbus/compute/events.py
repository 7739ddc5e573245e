"""External instance events a build can wait for.

The accelerator service binds ARQs asynchronously and then reports
``accelerator-request-bound`` through the API, which casts it here. The
event can arrive before the build starts waiting, so events are kept per
instance until a waiter takes them (or they expire).
"""

import collections
import threading
import time

EVENT_TTL = 3600


class InstanceEvents:
    def __init__(self):
        self._cond = threading.Condition()
        self._events = collections.defaultdict(dict)

    def deliver(self, instance_uuid, events):
        """Record ``events`` (InstanceEvents)."""
        now = time.monotonic()
        with self._cond:
            for event in events:
                self._events[instance_uuid][event.key] = (event, now)
            self._expire(now)
            self._cond.notify_all()

    def _expire(self, now):
        for uuid in list(self._events):
            events = self._events[uuid]
            for key in [
                k for k, (_, t) in events.items() if now - t > EVENT_TTL
            ]:
                del events[key]
            if not events:
                del self._events[uuid]

    def wait(self, instance_uuid, name, tags, timeout):
        """Wait for ``name`` with every tag in ``tags``.

        Returns {tag: event}; raises TimeoutError naming the missing tags.
        """
        wanted = set(tags)
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                have = {
                    tag: event
                    for (n, tag), (event, _) in self._events.get(
                        instance_uuid, {}
                    ).items()
                    if n == name and tag in wanted
                }
                if set(have) == wanted:
                    for tag in wanted:
                        self._events[instance_uuid].pop((name, tag), None)
                    return have
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(sorted(wanted - set(have)))
                self._cond.wait(remaining)

    def clear(self, instance_uuid):
        with self._cond:
            self._events.pop(instance_uuid, None)
