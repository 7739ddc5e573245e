"""The simulator's fast placement for flat hosts (``--placement memory``).

It answers what placement's candidate engine answers for the simulator's
requests - one unnumbered group (VCPU, MEMORY_MB, DISK_GB) with root
traits required or forbidden, a ``limit`` - on hosts of one provider each:
the hosts with room, in provider uuid order (or shuffled as placement
shuffles them, with the same random draws), at most ``limit`` of them.

Rather than a pass over every host per request, it keeps for each request
shape seen so far the sorted list of host indexes with room, and moves one
host in or out of those lists on each claim and release: an answer costs
the ``limit`` it returns.
"""

import bisect

import os_resource_classes

from nimbus.simulator import placement as placement_mod


class MemoryPlacement(placement_mod.BasePlacement):
    def __init__(self, trees, rcs, opts):
        super().__init__(trees)
        if any(len(tree) > 1 for tree in trees):
            raise ValueError(
                '--placement memory takes hosts without devices; use '
                '--placement engine'
            )
        self.traits = {tree[0][0]: frozenset(tree[0][4]) for tree in trees}
        self.order = sorted(self.capacity)
        self.index = {rp: i for i, rp in enumerate(self.order)}
        self.used = {rp: {} for rp in self.order}
        self.options = opts
        rank = {rc: i for i, rc in enumerate(os_resource_classes.STANDARDS)}
        self.rcs = {
            rp: sorted(cap, key=lambda rc: rank.get(rc, len(rank)))
            for rp, cap in self.capacity.items()
        }
        self.shapes = {}  # (want, required, forbidden) -> sorted indexes
        # rp -> its provider summary, until its usage changes, and
        # (resources, rp) -> its allocation request: the scheduler only
        # reads them
        self.summaries = {}
        self.areqs = {}

    @staticmethod
    def _query(params):
        want, required, forbidden, limit = {}, set(), set(), None
        for key, value in params:
            if key == 'resources':
                for part in value.split(','):
                    rc, _, n = part.partition(':')
                    want[rc] = int(n)
            elif key == 'root_required':
                for t in value.split(','):
                    (forbidden if t.startswith('!') else required).add(
                        t.lstrip('!')
                    )
            elif key == 'limit':
                limit = int(value)
            else:
                raise ValueError(
                    '--placement memory cannot answer %s=; use '
                    '--placement engine' % key
                )
        shape = (
            tuple(sorted(want.items())),
            frozenset(required),
            frozenset(forbidden),
        )
        return shape, limit

    def _fits(self, rp, shape):
        want, required, forbidden = shape
        traits = self.traits[rp]
        if not required <= traits or forbidden & traits:
            return False
        cap, used = self.capacity[rp], self.used[rp]
        return all(
            rc in cap and used.get(rc, 0) + n <= cap[rc] for rc, n in want
        )

    def _hosts(self, shape):
        hosts = self.shapes.get(shape)
        if hosts is None:
            hosts = self.shapes[shape] = [
                i for i, rp in enumerate(self.order) if self._fits(rp, shape)
            ]
        return hosts

    def _moved(self, rp):
        """``rp``'s usage changed: move it in or out of each shape's list."""
        self.summaries.pop(rp, None)
        i = self.index[rp]
        for shape, hosts in self.shapes.items():
            at = bisect.bisect_left(hosts, i)
            there = at < len(hosts) and hosts[at] == i
            fits = self._fits(rp, shape)
            if fits and not there:
                hosts.insert(at, i)
            elif there and not fits:
                del hosts[at]

    def get_allocation_candidates(self, ctxt, params):
        shape, limit = self._query(params)
        opts = self.options
        stops = [s for s in (limit, opts.max_allocation_candidates) if s >= 0]
        stop = min(stops) if stops else None
        hosts = self._hosts(shape)
        if opts.randomize_allocation_candidates:
            # placement shuffles every anchor, keeps ``limit``, shuffles
            # those: the same draws give the same answer
            picked = list(hosts)
            opts.rng.shuffle(picked)
            picked = picked[:stop] if stop is not None else picked
            opts.rng.shuffle(picked)
        else:
            picked = hosts[:stop] if stop is not None else list(hosts)
        order = self.order
        want = shape[0]
        cached, cached_areqs = self.summaries, self.areqs
        areqs, summaries = [], {}
        for i in picked:
            rp = order[i]
            areq = cached_areqs.get((want, rp))
            if areq is None:
                areq = cached_areqs[want, rp] = {
                    'allocations': {rp: {'resources': dict(want)}},
                    'mappings': {'': [rp]},
                }
            areqs.append(areq)
            summary = cached.get(rp)
            if summary is None:
                summary = cached[rp] = self._summary(rp)
            summaries[rp] = summary
        return {'allocation_requests': areqs, 'provider_summaries': summaries}

    def _summary(self, rp):
        cap, used = self.capacity[rp], self.used[rp]
        return {
            'resources': {
                rc: {'capacity': cap[rc], 'used': used.get(rc, 0)}
                for rc in self.rcs[rp]
            },
            'traits': sorted(self.traits[rp]),
            'parent_provider_uuid': None,
            'root_provider_uuid': rp,
        }

    def claim_resources(self, ctxt, consumer, areq, project_id, user_id):
        wanted = self._resources(areq)
        for rp, res in wanted.items():
            cap, used = self.capacity[rp], self.used[rp]
            if any(used.get(rc, 0) + n > cap[rc] for rc, n in res.items()):
                return False
        for rp, res in wanted.items():
            used = self.used[rp]
            for rc, n in res.items():
                used[rc] = used.get(rc, 0) + n
            self._moved(rp)
        self.allocations[consumer] = wanted
        return True

    def remove_allocations(self, ctxt, consumer):
        for rp, res in self.allocations.pop(consumer, {}).items():
            used = self.used[rp]
            for rc, n in res.items():
                used[rc] -= n
            self._moved(rp)

    def usage(self):
        return self.used
