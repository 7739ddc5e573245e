"""In-memory model of the placement data the candidate engine searches.

The loader (owned by the placement API) turns database rows into
:class:`Provider` objects and builds one :class:`Snapshot`.  A snapshot is
immutable once built and is shared by every request thread, so everything it
holds is either immutable (tuples, frozensets) or never handed out.

Building a snapshot is a handful of linear passes over the providers: about
10-20 ms for 6000 providers on a small machine.  All per-request work then uses
the indexes built here instead of scanning every provider.
"""

from __future__ import annotations


import re
from dataclasses import dataclass
from typing import Iterable

import os_resource_classes

from nimbus.placement.candidates import answers
from nimbus.placement.candidates import follow

SHARING_TRAIT = 'MISC_SHARES_VIA_AGGREGATE'
_PLAIN_UUID = re.compile(r'[0-9a-fA-F-]{1,64}')
# OpenStack Placement lists a provider summary's resource classes by their
# id: the standard classes in os-resource-classes' order, then the custom
# ones in the order they were created.
_RC_ORDER = {rc: i for i, rc in enumerate(os_resource_classes.STANDARDS)}


def rc_order(rc: str, custom_rank: dict | None = None) -> tuple:
    """Sort key of a resource class in a provider summary; ``custom_rank``
    gives the creation order of custom classes (by name when unknown)."""
    index = _RC_ORDER.get(rc)
    if index is not None:
        return (0, index, '')
    rank = (custom_rank or {}).get(rc)
    return (1, 0, rc) if rank is None else (1, rank, '')


@dataclass(slots=True)
class Inventory:
    """One resource class inventory record of a provider."""

    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int = 2**31 - 1
    step_size: int = 1
    allocation_ratio: float = 1.0

    @property
    def capacity(self) -> int:
        """Usable amount: ``int((total - reserved) * allocation_ratio)``."""
        return int((self.total - self.reserved) * self.allocation_ratio)


@dataclass(slots=True)
class Provider:
    """A resource provider with everything the engine needs to know."""

    uuid: str
    name: str
    generation: int
    parent_uuid: str | None
    root_uuid: str
    inventories: dict[str, Inventory]
    usages: dict[str, int]
    traits: frozenset[str]
    aggregates: frozenset[str]


# The memo entries that do not depend on usage (kept by with_usages).
USAGE_FREE_MEMO = ('flat', 'texts', 'compact-traits', 'compact-seen')


class Snapshot:
    """Immutable, indexed view of all providers, resource classes and traits.

    Public (read-only) attributes:

    ``providers``
        uuid -> :class:`Provider`.
    ``resource_classes`` / ``traits``
        frozensets of every known name (used to reject unknown names).
    ``rc_sequence``
        the resource class names as given, in id order (custom classes in
        creation order), which orders the summaries' resources.
    ``roots``
        tuple of root provider uuids, sorted.
    ``tree``
        root uuid -> tuple of the uuids of every provider in that tree, root
        first, then breadth-first with siblings sorted by uuid.
    ``children``
        uuid -> tuple of child uuids (sorted); absent for leaves.
    ``ancestors``
        uuid -> frozenset of the provider itself and all its ancestors.
    ``by_rc``
        resource class -> tuple of ``(uuid, root, free, min_unit, max_unit,
        step_size)`` for every provider with an inventory of that class,
        where ``free = capacity - used``.  Sorted by (root, uuid).
    ``fit``
        uuid -> {rc: (free, min_unit, max_unit, step_size, capacity, used)}.
    ``by_trait`` / ``by_agg``
        trait / aggregate -> frozenset of provider uuids.
    ``sharing``
        frozenset of uuids of providers with MISC_SHARES_VIA_AGGREGATE.
    ``anchors``
        sharing provider uuid -> tuple of the (sorted) root uuids of every tree
        with a provider in one of the sharing provider's aggregates.  Those
        are the trees the sharing provider can serve.
    ``has_trees``
        True when at least one provider has a parent.
    ``plain_uuids``
        True when every provider uuid is plain hex and dashes (safe to
        write into JSON without escaping).
    ``fragments``
        ``{nested: {uuid: bytes}}``: provider summaries serialised once
        and reused by every response (filled lazily by the renderer).
    ``memo``
        search results per request shape that the engine reuses (bounded;
        values are never modified, except that a ``('flat', ...)`` entry
        gains the candidate of each anchor as it is first visited), and
        the serialised answers of deterministic queries (``('answer',
        ..)``: bytes).
        ``fragments`` and ``memo`` are the only mutable parts, and only ever
        caches of immutable data.
    """

    __slots__ = (
        'providers',
        'resource_classes',
        'traits',
        'roots',
        'tree',
        'children',
        'ancestors',
        'by_rc',
        'fit',
        'by_trait',
        'by_agg',
        'sharing',
        'anchors',
        'has_trees',
        'summary_resources',
        'sorted_traits',
        'plain_uuids',
        'fragments',
        'memo',
        'rc_sequence',
    )

    def __init__(
        self,
        providers: Iterable[Provider],
        resource_classes: Iterable[str],
        traits: Iterable[str],
    ):
        provs = {p.uuid: p for p in providers}
        self.providers = provs
        self.rc_sequence = tuple(resource_classes)
        self.resource_classes = frozenset(self.rc_sequence)
        custom_rank = {
            rc: i
            for i, rc in enumerate(self.rc_sequence)
            if rc not in _RC_ORDER
        }
        # ``traits`` in a sequence come in id order, the order Placement
        # lists a provider's traits in (its resource_provider_traits rows);
        # given as a set, summaries list traits by name
        trait_seq = tuple(traits)
        trait_rank = (
            {}
            if isinstance(traits, (set, frozenset))
            else {t: i for i, t in enumerate(trait_seq)}
        )
        self.traits = frozenset(trait_seq)

        children: dict[str, list[str]] = {}
        by_trait: dict[str, set[str]] = {}
        by_agg: dict[str, set[str]] = {}
        by_rc: dict[str, list[tuple]] = {}
        fit: dict[str, dict[str, tuple]] = {}
        summary_resources: dict[str, tuple] = {}
        sorted_traits: dict[str, tuple] = {}
        roots = []
        sharing = []
        for uuid, p in provs.items():
            parent = p.parent_uuid
            if parent is None:
                roots.append(uuid)
            else:
                children.setdefault(parent, []).append(uuid)
            for t in p.traits:
                by_trait.setdefault(t, set()).add(uuid)
            for a in p.aggregates:
                by_agg.setdefault(a, set()).add(uuid)
            if SHARING_TRAIT in p.traits:
                sharing.append(uuid)
            pfit = {}
            summ = []
            usages = p.usages
            root = p.root_uuid
            for rc, inv in p.inventories.items():
                cap = int((inv.total - inv.reserved) * inv.allocation_ratio)
                used = usages.get(rc, 0)
                free = cap - used
                pfit[rc] = (
                    free,
                    inv.min_unit,
                    inv.max_unit,
                    inv.step_size,
                    cap,
                    used,
                )
                summ.append((rc, cap, used))
                by_rc.setdefault(rc, []).append(
                    (
                        uuid,
                        root,
                        free,
                        inv.min_unit,
                        inv.max_unit,
                        inv.step_size,
                    )
                )
            fit[uuid] = pfit
            summ.sort(key=lambda item: rc_order(item[0], custom_rank))
            summary_resources[uuid] = tuple(summ)
            sorted_traits[uuid] = tuple(
                sorted(
                    p.traits,
                    key=lambda t: (trait_rank.get(t, len(trait_rank)), t),
                )
            )

        self.children = {k: tuple(sorted(v)) for k, v in children.items()}
        self.has_trees = bool(children)
        self.roots = tuple(sorted(roots))
        tree = {}
        ancestors = {}
        for root in self.roots:
            members = [root]
            ancestors[root] = frozenset((root,))
            i = 0
            while i < len(members):
                cur = members[i]
                i += 1
                for kid in self.children.get(cur, ()):
                    ancestors[kid] = ancestors[cur] | {kid}
                    members.append(kid)
            tree[root] = tuple(members)
        self.tree = tree
        self.ancestors = ancestors
        self.by_rc = {
            rc: tuple(sorted(v, key=lambda x: (x[1], x[0])))
            for rc, v in by_rc.items()
        }
        self.fit = fit
        self.by_trait = {t: frozenset(v) for t, v in by_trait.items()}
        self.by_agg = {a: frozenset(v) for a, v in by_agg.items()}
        self.sharing = frozenset(sharing)
        anchors = {}
        for uuid in sharing:
            rts = set()
            for a in provs[uuid].aggregates:
                for member in by_agg[a]:
                    rts.add(provs[member].root_uuid)
            anchors[uuid] = tuple(sorted(rts))
        self.anchors = anchors
        self.summary_resources = summary_resources
        self.sorted_traits = sorted_traits
        self.plain_uuids = all(_PLAIN_UUID.fullmatch(u) for u in provs)
        self.fragments = {False: {}, True: {}}
        self.memo = {}

    def with_usages(self, changed: Iterable[Provider]) -> 'Snapshot':
        """A new snapshot in which each provider of ``changed`` replaces
        the one of the same uuid here. Only their usages and generations
        may differ (an allocation write): their entries in ``providers``,
        ``fit``, ``by_rc`` and ``summary_resources`` are replaced, every
        other index is shared, and so are the serialised summaries of the
        others. Building a whole snapshot after each claim cost about
        15 ms at 1000 hosts with two devices each (a fifth of the
        all-in-one's CPU while it booted); this is a few dict copies.
        Raises KeyError for a provider this snapshot does not have."""
        changed = list(changed)
        new = object.__new__(Snapshot)
        for name in Snapshot.__slots__:
            setattr(new, name, getattr(self, name))
        provs = dict(self.providers)
        fit = dict(self.fit)
        summaries = dict(self.summary_resources)
        entries = {}  # rc -> {uuid: by_rc entry}
        for p in changed:
            uuid = p.uuid
            if uuid not in provs:
                raise KeyError(uuid)
            provs[uuid] = p
            usages = p.usages
            pfit = {}
            # Deliberately like the full build's fit loop above: inlined
            # (no per-inventory call) because both run for every provider.
            for rc, inv in p.inventories.items():
                cap = int((inv.total - inv.reserved) * inv.allocation_ratio)
                used = usages.get(rc, 0)
                free = cap - used
                pfit[rc] = (
                    free,
                    inv.min_unit,
                    inv.max_unit,
                    inv.step_size,
                    cap,
                    used,
                )
                entries.setdefault(rc, {})[uuid] = (
                    uuid,
                    p.root_uuid,
                    free,
                    inv.min_unit,
                    inv.max_unit,
                    inv.step_size,
                )
            fit[uuid] = pfit
            summaries[uuid] = tuple(
                (rc, cap, usages.get(rc, 0))
                for rc, cap, _used in self.summary_resources[uuid]
            )
        by_rc = dict(self.by_rc)
        for rc, replace in entries.items():
            by_rc[rc] = follow.by_rc_replaced(by_rc[rc], replace)
        new.providers = provs
        new.fit = fit
        new.by_rc = by_rc
        new.summary_resources = summaries
        # the others' serialised summaries: a copy without the changed
        # providers' (written again when next asked for)
        fragments = {}
        for nested, frags in self.fragments.items():
            frags = dict(frags)
            for p in changed:
                frags.pop(p.uuid, None)
            fragments[nested] = frags
        new.fragments = fragments
        # The candidates of anchors that supply a request shape on their
        # own (``('flat', ..)``) depend on which classes and traits each
        # provider has, not on its usage: they stay valid (whether such an
        # anchor still has room is checked per request), and so does the
        # JSON text of each (``('texts', ..)``, see render.py).
        # The providers with room for an amount (``('fit', ..)``) follow
        # the changed ones: a copy with each added or removed; so do the
        # pieces of a suffixed group asking for resources alone
        # (``('granular', ..)``).
        memo = list(self.memo.items())
        new.memo = {k: v for k, v in memo if k[0] in USAGE_FREE_MEMO}
        free = {
            (rc, e[0]): e[2] for rc, es in entries.items() for e in es.values()
        }
        moved = [p.uuid for p in changed]
        moved_rcs = None
        for key, value in memo:
            if key[0] == 'fit':
                new.memo[key] = follow.fit(key, value, free, new)
            elif key[0] == 'granular':
                value = follow.granular(key, value, moved, new)
                if value is not None:
                    new.memo[key] = value
            elif key[0] == 'answer':
                # The bytes of an answer no moved usage touches (see
                # answers.py) are this snapshot's answer too.
                if moved_rcs is None:
                    moved_rcs = {
                        p.uuid: answers.moved_classes(
                            self.providers[p.uuid], p
                        )
                        for p in changed
                    }
                deps = self.memo.get((answers.DEPS, key))
                if answers.follows(deps, moved_rcs):
                    new.memo[key] = value
                    new.memo[answers.DEPS, key] = deps
        return new

    def inherit_fragments(self, old: 'Snapshot'):
        """Reuse ``old``'s serialised summaries of every provider that is
        the very same :class:`Provider` object here (a usage refresh keeps
        the unchanged ones)."""
        provs = self.providers
        old_provs = old.providers
        for nested, frags in old.fragments.items():
            mine = self.fragments.get(nested)
            if mine is None:
                # the compact rows (compact.py) index the old snapshot's
                # trait table: written again for this one
                continue
            for u, frag in list(frags.items()):
                if provs.get(u) is old_provs.get(u):
                    mine[u] = frag

    def root_of(self, uuid: str) -> str:
        """Root uuid of a provider."""
        return self.providers[uuid].root_uuid

    def anchors_of(self, uuid: str) -> tuple[str, ...]:
        """Roots a provider can supply: its own, plus shared trees."""
        root = self.providers[uuid].root_uuid
        extra = self.anchors.get(uuid)
        if not extra:
            return (root,)
        return (root,) + tuple(a for a in extra if a != root)
