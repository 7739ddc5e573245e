"""What a kept answer of GET /allocation_candidates depends on.

A snapshot keeps the bytes of each deterministic answer (``('answer',
..)`` memo entries, see :func:`nimbus.placement.candidates.
get_allocation_candidates_json`). An allocation write of this process
leads to a new snapshot in which only some providers' usages moved
(:meth:`Snapshot.with_usages <nimbus.placement.candidates.model.Snapshot.
with_usages>`). An answer depends on usages in two ways only:

- which candidates there are: each requested amount must fit, so only the
  usages of the resource classes the query asks for count (traits,
  aggregates, trees and inventories do not move in such a write);
- the provider summaries: every class's ``used`` of each provider listed.

So an answer stays the very same bytes when no changed provider moved the
usage of a requested class and none of them is listed in its summaries;
:func:`follows` tells, and the new snapshot keeps such answers. The set
of listed providers is computed the first time a write asks (never for a
query whose requested classes moved, the usual case for the plain query
after a claim) and kept with the answer.
"""

from __future__ import annotations

# The memo key of an answer's dependencies: (DEPS, answer key).
DEPS = 'answer_deps'


class AnswerDeps:
    """The requested classes of a kept answer and, once asked, the uuids
    its summaries list (``listed()`` computes them, e.g. ``uuids_of`` of
    render.py over the answer's candidates)."""

    __slots__ = ('requested', '_listed', '_uuids')

    def __init__(self, requested, listed):
        self.requested = frozenset(requested)
        self._listed = listed
        self._uuids = None

    def uuids(self):
        if self._uuids is None:
            self._uuids = frozenset(self._listed())
            self._listed = None  # let the candidates go
        return self._uuids


def moved_classes(old, new):
    """The resource classes whose usage differs between two providers."""
    a, b = old.usages, new.usages
    return {rc for rc in a.keys() | b.keys() if a.get(rc, 0) != b.get(rc, 0)}


def follows(deps, moved):
    """True when an answer with ``deps`` is unchanged by ``moved``
    (``{uuid: classes whose usage moved}``)."""
    if deps is None:
        return False
    requested = deps.requested
    for rcs in moved.values():
        if not requested.isdisjoint(rcs):
            return False
    listed = deps.uuids()
    return listed.isdisjoint(moved)
