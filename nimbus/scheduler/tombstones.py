"""Tombstones: the uuids of things the scheduler was told are gone.

Cache events travel as casts, and casts can arrive late, twice or out of
order (a broker redelivering, two senders racing, a delete that overtook
the update sent before it). A deleted instance or server group never comes
back under the same uuid, so once the scheduler has seen it deleted, any
later event that would put it back in the cache is stale and is dropped.

A :class:`Tombstones` remembers the last ``size`` uuids (oldest forgotten
first), enough to outlive any message still in flight.
"""

import collections


class Tombstones:
    def __init__(self, size=10000):
        self._size = size
        self._uuids = collections.OrderedDict()

    def bury(self, uuid):
        self._uuids[uuid] = None
        self._uuids.move_to_end(uuid)
        while len(self._uuids) > self._size:
            self._uuids.popitem(last=False)

    def __contains__(self, uuid):
        return uuid in self._uuids

    def __len__(self):
        return len(self._uuids)
