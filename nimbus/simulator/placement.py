"""The simulator's placement: three interchangeable backends.

Each answers the scheduler's placement client contract
(``get_allocation_candidates``, ``claim_resources``, ``remove_allocations``)
and reports usage (``usage()``: provider -> {rc: used}, ``capacity``:
provider -> {rc: capacity}) for the simulator's samples.

``engine`` (default)
    Nimbus placement's allocation-candidate engine
    (:mod:`nimbus.placement.candidates`) on a snapshot the simulator keeps
    current (:mod:`nimbus.simulator.live`): traits, nested providers,
    aggregates, allocation ratios, reserved amounts, min/max unit and step
    size, limits, breadth- or depth-first, randomised order - the code a
    cloud's placement runs. Claims check the room the way placement does.
``api``
    The placement REST application itself in process
    (:mod:`nimbus.placement.direct`) on a SQLite file, reached with the
    scheduler's own :class:`PlacementClient`: every claim is a PUT
    /allocations. Slow (the API re-reads usage after every claim); for
    checking the other two on small traces.
``memory``
    A flat table (one provider per host, no devices) answering in the same
    order as the engine; kept because it needs no snapshot (it is not
    faster than ``engine`` any more, see docs/insight.md).
"""

import os
import random
import shutil
import tempfile
import types

import os_resource_classes
import os_traits

from nimbus.placement import candidates
from nimbus.simulator import live

MICROVERSION = (1, 39)
BACKENDS = ('engine', 'api', 'memory')
PLACEMENT_OPTIONS = {
    'max_allocation_candidates': int,
    'randomize_allocation_candidates': lambda v: (
        str(v).lower() in ('1', 'true', 'yes', 'on')
    ),
    'allocation_candidates_generation_strategy': str,
}


def options(settings=None, seed=0):
    """Placement's candidate options (its defaults, then ``settings``:
    ``{name: value}`` from ``placement.<name>=value``)."""
    opts = types.SimpleNamespace(
        max_allocation_candidates=-1,
        randomize_allocation_candidates=False,
        allocation_candidates_generation_strategy='breadth-first',
        rng=random.Random(seed),
    )
    for name, value in (settings or {}).items():
        if name not in PLACEMENT_OPTIONS:
            raise ValueError(
                'unknown placement option %r (known: %s)'
                % (name, ', '.join(sorted(PLACEMENT_OPTIONS)))
            )
        setattr(opts, name, PLACEMENT_OPTIONS[name](value))
    return opts


def _capacity(inv):
    total, reserved, ratio = inv
    return int((total - reserved) * ratio)


def _known(trees, rcs):
    rc_names = list(os_resource_classes.STANDARDS)
    rc_names += [rc for rc in rcs if rc not in rc_names]
    traits = set(os_traits.get_traits())
    for tree in trees:
        for row in tree:
            traits.update(row[4])
    return rc_names, sorted(traits)


class _Base:
    def __init__(self, trees):
        self.capacity = {}
        self.root = {}
        for tree in trees:
            for uuid, _name, _parent, invs, _traits in tree:
                self.capacity[uuid] = {
                    rc: _capacity(inv) for rc, inv in invs.items()
                }
                self.root[uuid] = tree[0][0]
        self.allocations = {}  # consumer -> {rp: {rc: amount}}

    @staticmethod
    def _resources(areq):
        return {
            rp: dict(body['resources'])
            for rp, body in areq['allocations'].items()
        }

    def host_of(self, consumer):
        """The root provider of a consumer's allocation (None: none)."""
        allocs = self.allocations.get(consumer)
        return self.root[next(iter(allocs))] if allocs else None

    def close(self):
        pass


class EnginePlacement(_Base):
    def __init__(self, trees, rcs, opts):
        super().__init__(trees)
        rc_names, traits = _known(trees, rcs)
        providers = []
        for tree in trees:
            root = tree[0][0]
            for uuid, name, parent, invs, tr in tree:
                providers.append(
                    candidates.Provider(
                        uuid=uuid,
                        name=name,
                        generation=1,
                        parent_uuid=parent,
                        root_uuid=root,
                        inventories={
                            rc: candidates.Inventory(
                                total, reserved, allocation_ratio=ratio
                            )
                            for rc, (total, reserved, ratio) in invs.items()
                        },
                        usages={},
                        traits=frozenset(tr),
                        aggregates=frozenset(),
                    )
                )
        self.live = live.LiveSnapshot(providers, rc_names, traits)
        self.options = opts

    def get_allocation_candidates(self, ctxt, params):
        query = {}
        for key, value in params:
            query.setdefault(key, []).append(value)
        try:
            return candidates.get_allocation_candidates(
                self.live.snapshot, query, MICROVERSION, self.options
            )
        except candidates.CandidatesQueryError as exc:
            raise ValueError('placement refused the query: %s' % exc.detail)

    def claim_resources(self, ctxt, consumer, areq, project_id, user_id):
        wanted = self._resources(areq)
        for rp, res in wanted.items():
            for rc, amount in res.items():
                room = self.live.free(rp, rc)
                if room is None:
                    return False
                free, lo, hi, step = room
                if amount > free or not lo <= amount <= hi or amount % step:
                    return False
        for rp, res in wanted.items():
            self.live.change(rp, res)
        self.allocations[consumer] = wanted
        return True

    def remove_allocations(self, ctxt, consumer):
        for rp, res in self.allocations.pop(consumer, {}).items():
            self.live.change(rp, {rc: -n for rc, n in res.items()})

    def usage(self):
        return {rp: p.usages for rp, p in self.live.snapshot.providers.items()}


class MemoryPlacement(_Base):
    """Flat hosts only; the same candidates, in the same order, as the
    engine gives for one unnumbered group on flat trees."""

    def __init__(self, trees, rcs, opts):
        super().__init__(trees)
        if any(len(tree) > 1 for tree in trees):
            raise ValueError(
                '--placement memory takes hosts without devices; use '
                '--placement engine'
            )
        self.traits = {tree[0][0]: sorted(tree[0][4]) for tree in trees}
        self.order = sorted(self.capacity)
        self.used = {rp: {} for rp in self.order}
        self.options = opts
        rank = {rc: i for i, rc in enumerate(os_resource_classes.STANDARDS)}
        self.rcs = {
            rp: sorted(cap, key=lambda rc: rank.get(rc, len(rank)))
            for rp, cap in self.capacity.items()
        }

    def _query(self, params):
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
        return want, required, forbidden, limit

    def get_allocation_candidates(self, ctxt, params):
        want, required, forbidden, limit = self._query(params)
        opts = self.options
        stops = [s for s in (limit, opts.max_allocation_candidates) if s >= 0]
        stop = min(stops) if stops else None
        fits = []
        for rp in self.order:
            cap, used = self.capacity[rp], self.used[rp]
            traits = self.traits[rp]
            if any(
                rc not in cap or used.get(rc, 0) + n > cap[rc]
                for rc, n in want.items()
            ):
                continue
            if not required.issubset(traits) or forbidden.intersection(traits):
                continue
            fits.append(rp)
        if opts.randomize_allocation_candidates:
            opts.rng.shuffle(fits)
        if stop is not None:
            fits = fits[:stop]
        if opts.randomize_allocation_candidates:
            opts.rng.shuffle(fits)
        resources = dict(sorted(want.items()))
        return {
            'allocation_requests': [
                {
                    'allocations': {rp: {'resources': dict(resources)}},
                    'mappings': {'': [rp]},
                }
                for rp in fits
            ],
            'provider_summaries': {rp: self._summary(rp) for rp in fits},
        }

    def _summary(self, rp):
        cap, used = self.capacity[rp], self.used[rp]
        return {
            'resources': {
                rc: {'capacity': cap[rc], 'used': used.get(rc, 0)}
                for rc in self.rcs[rp]
            },
            'traits': list(self.traits[rp]),
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
        self.allocations[consumer] = wanted
        return True

    def remove_allocations(self, ctxt, consumer):
        for rp, res in self.allocations.pop(consumer, {}).items():
            used = self.used[rp]
            for rc, n in res.items():
                used[rc] -= n

    def usage(self):
        return self.used


class ApiPlacement(_Base):
    """Placement's REST application on a SQLite file, in process."""

    def __init__(self, trees, rcs, opts):
        from nimbus.common import config
        from nimbus.common.clients.placement import PlacementClient
        from nimbus.placement import db as placement_db
        from nimbus.placement import direct

        super().__init__(trees)
        self.workdir = tempfile.mkdtemp(prefix='nimbus-simulate-')
        url = 'sqlite:///' + os.path.join(self.workdir, 'placement.sqlite')
        placement_db.sync(url)
        placement = {name: getattr(opts, name) for name in PLACEMENT_OPTIONS}
        conf = config.build_conf(
            [],
            overrides={
                'placement_database': {'connection': url},
                'placement': placement,
            },
        )
        self._direct = direct.PlacementDirect(conf, microversion='1.39')
        session = self._direct.__enter__()
        self.client = PlacementClient(direct.BASE_URL, session=session)
        self._populate(session, trees, rcs)

    @staticmethod
    def _populate(s, trees, rcs):
        def ok(r):
            if r.status_code >= 400:
                raise RuntimeError('placement: %s' % r.text)

        for rc in rcs:
            if rc.startswith('CUSTOM_'):
                ok(s.put('/resource_classes/%s' % rc))
        custom = {t for tree in trees for row in tree for t in row[4]}
        for trait in sorted(custom):
            if trait.startswith('CUSTOM_'):
                ok(s.put('/traits/%s' % trait))
        for tree in trees:
            for uuid, name, parent, invs, traits in tree:
                body = {'uuid': uuid, 'name': name}
                if parent:
                    body['parent_provider_uuid'] = parent
                ok(s.post('/resource_providers', json=body))
                ok(
                    s.put(
                        '/resource_providers/%s/inventories' % uuid,
                        json={
                            'resource_provider_generation': 0,
                            'inventories': {
                                rc: {
                                    'total': total,
                                    'reserved': reserved,
                                    'allocation_ratio': ratio,
                                }
                                for rc, (
                                    total,
                                    reserved,
                                    ratio,
                                ) in invs.items()
                            },
                        },
                    )
                )
                if traits:
                    ok(
                        s.put(
                            '/resource_providers/%s/traits' % uuid,
                            json={
                                'resource_provider_generation': 1,
                                'traits': sorted(traits),
                            },
                        )
                    )

    def get_allocation_candidates(self, ctxt, params):
        return self.client.get_allocation_candidates(ctxt, params)

    def claim_resources(self, ctxt, consumer, areq, project_id, user_id):
        if not self.client.claim_resources(
            ctxt, consumer, areq, project_id, user_id
        ):
            return False
        self.allocations[consumer] = self._resources(areq)
        return True

    def remove_allocations(self, ctxt, consumer):
        self.allocations.pop(consumer, None)
        self.client.remove_allocations(ctxt, consumer)

    def usage(self):
        used = {rp: {} for rp in self.capacity}
        for allocs in self.allocations.values():
            for rp, res in allocs.items():
                for rc, n in res.items():
                    used[rp][rc] = used[rp].get(rc, 0) + n
        return used

    def close(self):
        self._direct.__exit__(None, None, None)
        shutil.rmtree(self.workdir, ignore_errors=True)


def make(backend, trees, rcs, opts):
    cls = {
        'engine': EnginePlacement,
        'api': ApiPlacement,
        'memory': MemoryPlacement,
    }[backend]
    return cls(trees, rcs, opts)
