"""Tombstones: the uuids of things the scheduler was told are gone.

Cache events travel as casts, and casts can arrive late, twice or out of
order (a broker redelivering, two senders racing, a delete that overtook
the update sent before it), and a reload's database read can race a
delete. A deleted instance or server group never comes back under the
same uuid, so once the scheduler has seen it deleted, any later event or
read that would put it back in the cache is stale and is dropped.

A :class:`Tombstones` remembers each uuid for ``ttl`` seconds (10
minutes: ten of the scheduler's full reloads from the databases, which
correct anything a later message could still get wrong) and never more
than the last ``size`` uuids (oldest forgotten first). So it holds about
what the cloud deletes in ``ttl``, not a high-water mark of every delete
since the start.
"""

import collections
import time


class Tombstones:
    def __init__(self, size=10000, ttl=600.0, clock=time.monotonic):
        self._size = size
        self._ttl = ttl
        self._clock = clock
        self._uuids = collections.OrderedDict()  # uuid -> buried at

    def bury(self, uuid):
        now = self._clock()
        self._uuids[uuid] = now
        self._uuids.move_to_end(uuid)
        self._forget(now)

    def _forget(self, now):
        graves = self._uuids
        while len(graves) > self._size:
            graves.popitem(last=False)
        expired_before = now - self._ttl
        while graves:
            oldest = next(iter(graves))
            if graves[oldest] > expired_before:
                break
            del graves[oldest]

    def __contains__(self, uuid):
        buried = self._uuids.get(uuid)
        return buried is not None and buried > self._clock() - self._ttl

    def __len__(self):
        return len(self._uuids)
