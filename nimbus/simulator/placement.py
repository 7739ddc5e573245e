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
    There is no wire in process: the body is built from the engine's
    candidates (``candidates.candidate_list``) with each provider's summary
    rendered once until its usage moves and each candidate's allocation
    request once, the same body placement renders (tests/unit/simulator).
``api``
    The placement REST application itself in process
    (:mod:`nimbus.placement.direct`) on a SQLite file, reached with the
    scheduler's own :class:`PlacementClient`: every claim is a PUT
    /allocations. Slow (the API re-reads usage after every claim); for
    checking the other two on small traces.
``memory``
    Flat hosts only (one provider each, no devices): per request shape a
    sorted list of the hosts with room, updated on each claim and release,
    so an answer costs the ``limit`` it returns rather than a pass over
    every host (:mod:`nimbus.simulator.memory`). The same candidates in the
    same order as the engine (tests/functional/test_simulator.py); the
    fast path for large traces.
"""

import os
import random
import shutil
import tempfile
import types

import os_resource_classes
import os_traits

from nimbus.placement import candidates
from nimbus.placement.candidates import render
from nimbus.simulator import live

MICROVERSION = (1, 39)
# distinct candidates whose allocation request is kept (hosts x request
# shapes; devices multiply them): past this the cache starts over
AREQ_CACHE_SIZE = 200000
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
    if opts.allocation_candidates_generation_strategy not in (
        'depth-first',
        'breadth-first',
    ):
        raise ValueError(
            'placement.allocation_candidates_generation_strategy: '
            'depth-first or breadth-first'
        )
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


class BasePlacement:
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


class EnginePlacement(BasePlacement):
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
        # What placement would render, kept between requests (the
        # scheduler only reads them): a provider's summary until its usage
        # moves, and the allocation request of each candidate
        self.summaries = {}
        self.areqs = {}  # candidate -> (allocation request, roots)
        self.areq_ids = {}  # id(candidate) -> (candidate, areq, roots)

    def get_allocation_candidates(self, ctxt, params):
        """The body placement's engine answers, built from the engine's
        candidates with the summaries and allocation requests rendered
        once and reused while they stay true (there is no wire in
        process)."""
        query = {}
        for key, value in params:
            query.setdefault(key, []).append(value)
        snap = self.live.snapshot
        try:
            cands, requested = candidates.candidate_list(
                snap, query, MICROVERSION, self.options
            )
        except candidates.CandidatesQueryError as exc:
            raise ValueError(
                'placement refused the query: %s' % exc.detail
            ) from exc
        return self._body(snap, cands, requested)

    def _body(self, snap, cands, requested):
        """What :mod:`~nimbus.placement.candidates.render` makes of
        ``cands`` at 1.39: each candidate's allocation request, then the
        summary of every provider in the trees of the providers they use
        (in the order those first appear)."""
        cached, by_id = self.areqs, self.areq_ids
        if len(cached) > AREQ_CACHE_SIZE:
            cached.clear()
        if len(by_id) > AREQ_CACHE_SIZE:
            by_id.clear()
        areqs, roots = [], {}
        for cand in cands:
            # the engine hands out the same candidate object again while
            # it holds (a flat host's): found by identity, not by hashing
            # its nested tuples; the entry keeps it alive, so no other
            # object can come with its id meanwhile
            hit = by_id.get(id(cand))
            if hit is None or hit[0] is not cand:
                rendered = cached.get(cand)
                if rendered is None:
                    rendered = cached[cand] = self._render(snap, cand)
                hit = by_id[id(cand)] = (cand,) + rendered
            areqs.append(hit[1])
            for root in hit[2]:
                roots[root] = None
        summaries, tree = self.summaries, snap.tree
        if snap.has_trees:
            uuids = [u for root in roots for u in tree[root]]
        else:  # every tree is its root alone
            uuids = roots
        missing = [u for u in uuids if u not in summaries]
        if missing:
            summaries.update(
                render.summaries_of(snap, missing, MICROVERSION, requested)
            )
        return {
            'allocation_requests': areqs,
            'provider_summaries': {u: summaries[u] for u in uuids},
        }

    @staticmethod
    def _render(snap, cand):
        """A candidate's allocation request, and the roots of the
        providers it uses in the order they appear."""
        areq = render.allocation_requests((cand,), MICROVERSION)[0]
        providers = snap.providers
        roots = {providers[p].root_uuid: None for p, _rc, _n in cand[0]}
        return areq, tuple(roots)

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
            self.summaries.pop(rp, None)
        self.allocations[consumer] = wanted
        return True

    def remove_allocations(self, ctxt, consumer):
        for rp, res in self.allocations.pop(consumer, {}).items():
            self.live.change(rp, {rc: -n for rc, n in res.items()})
            self.summaries.pop(rp, None)

    def usage(self):
        return {rp: p.usages for rp, p in self.live.snapshot.providers.items()}


class ApiPlacement(BasePlacement):
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
