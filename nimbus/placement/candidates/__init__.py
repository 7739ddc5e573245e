"""Allocation-candidate engine of Nimbus Placement.

Public interface:

``get_allocation_candidates(snapshot, params, microversion, options)``
    The complete JSON body (a dict) of ``GET /allocation_candidates``;
    ``get_allocation_candidates_json`` returns the same body as JSON bytes
    (what the API sends; much cheaper for thousands of candidates).
    ``params``: ``dict[str, list[str]]``; ``microversion``: ``(1, 10)`` ..
    ``(1, 39)``; ``options`` has ``max_allocation_candidates`` (-1 means
    unlimited), ``randomize_allocation_candidates``,
    ``allocation_candidates_generation_strategy`` ('depth-first' or
    'breadth-first') and ``rng`` (``random.Random`` or None).
    Raises :class:`CandidatesQueryError` for a bad query.

``candidate_list(snapshot, params, microversion, options)``
    The same search, its candidates in the engine's own form (see
    :func:`find_candidates`) and the requested resource classes, unrendered:
    for an in-process caller that renders (and caches) what it needs with
    :mod:`~nimbus.placement.candidates.render`.

``parse_resources(value)`` -> ``{rc: amount}``
``parse_trait_expr(values, microversion)`` -> ``(required, forbidden)``
    ``required``: list of frozensets (AND of any-of sets); ``forbidden``:
    frozenset.
``parse_member_of(values, microversion)`` -> ``(required, forbidden)``
    same shapes, aggregate uuids.

The result is deterministic (anchors sorted by root uuid) unless
``randomize_allocation_candidates`` is set; then anchors are visited in a
random order and the final list is shuffled with ``options.rng``.
"""

from __future__ import annotations

import gc
import random
import threading
from contextlib import contextmanager

from nimbus.placement.candidates import answers, render
from nimbus.placement.candidates import compact as compact_mod
from nimbus.placement.candidates.engine import _Search
from nimbus.placement.candidates.errors import CandidatesQueryError
from nimbus.placement.candidates.groups import remember
from nimbus.placement.candidates.model import Inventory, Provider, Snapshot
from nimbus.placement.candidates.params import (
    ParsedRequest,
    RequestGroup,
    check_names,
    parse_request,
)
from nimbus.placement.candidates.values import (
    parse_member_of,
    parse_resources,
    parse_trait_expr,
)

__all__ = [
    'get_allocation_candidates',
    'get_allocation_candidates_json',
    'CandidatesQueryError',
    'parse_trait_expr',
    'parse_member_of',
    'parse_resources',
    'parse_request',
    'Inventory',
    'Provider',
    'Snapshot',
    'ParsedRequest',
    'RequestGroup',
    'find_candidates',
    'candidate_list',
    'check_names',
]

MIN_VERSION = (1, 10)
MAX_VERSION = (1, 39)


_gc_lock = threading.Lock()
_gc_users = 0
_gc_was_enabled = False


@contextmanager
def _no_gc():
    """Pause the cyclic garbage collector while building a response.

    A large response allocates tens of thousands of small containers that
    all survive, which triggers full collections traversing the whole heap
    (the snapshot included) and triples the run time.  Nothing built here
    forms cycles, so reference counting frees it all.  A counter makes this
    safe with concurrent requests: the first one in disables, the last one
    out restores the previous state.
    """
    global _gc_users, _gc_was_enabled
    with _gc_lock:
        if _gc_users == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_users += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_users -= 1
            if _gc_users == 0 and _gc_was_enabled:
                gc.enable()


def find_candidates(
    snapshot: Snapshot, req: ParsedRequest, microversion, options
):
    """Return the list of candidates ``(items, mappings)`` for a parsed
    request: ``items`` a tuple of ``(rp_uuid, rc, amount)`` (amounts of
    several groups summed per provider), ``mappings`` a sorted tuple of
    ``(suffix, (rp_uuid, ..))``.  Candidates are unique; below 1.34 (no
    mappings in the response) unique by allocations alone."""
    search = _Search(
        snapshot,
        req,
        nested_aware=microversion >= (1, 29),
        with_mappings=microversion >= (1, 34),
    )
    randomize = bool(
        getattr(options, 'randomize_allocation_candidates', False)
    )
    rng = getattr(options, 'rng', None)
    if randomize and rng is None:
        rng = random.Random()
    max_ac = getattr(options, 'max_allocation_candidates', -1)
    if max_ac is None:
        max_ac = -1
    stops = []
    if max_ac >= 0:
        stops.append(max_ac)
    if req.limit is not None:
        stops.append(req.limit)
    stop_at = min(stops) if stops else None
    if stop_at == 0:
        return []
    strategy = (
        getattr(
            options, 'allocation_candidates_generation_strategy', 'depth-first'
        )
        or 'depth-first'
    )
    cands = search.generate(strategy, rng, randomize, stop_at)
    if randomize:
        rng.shuffle(cands)
    return cands


def _prepare(snapshot, params, microversion):
    mv = tuple(microversion)
    if not MIN_VERSION <= mv <= MAX_VERSION:
        raise CandidatesQueryError(
            'Microversion %d.%d is outside the supported range 1.10-1.39 for '
            'GET /allocation_candidates.' % mv
        )
    req = parse_request(params, mv)
    check_names(req, snapshot.resource_classes, snapshot.traits)
    requested = set()
    for g in req.groups.values():
        requested.update(g.resources)
    return mv, req, requested


def get_allocation_candidates(
    snapshot: Snapshot, params, microversion, options
) -> dict:
    """Body of ``GET /allocation_candidates`` (see module docstring)."""
    mv, req, requested = _prepare(snapshot, params, microversion)
    with _no_gc():
        cands = find_candidates(snapshot, req, mv, options)
        return {
            'allocation_requests': render.allocation_requests(cands, mv),
            'provider_summaries': render.provider_summaries(
                snapshot, cands, mv, requested
            ),
        }


def candidate_list(snapshot: Snapshot, params, microversion, options):
    """``(candidates, requested)``: the candidates of ``GET
    /allocation_candidates`` as :func:`find_candidates` returns them and
    the resource classes the request asks for (which summaries list below
    1.27), nothing rendered."""
    mv, req, requested = _prepare(snapshot, params, microversion)
    with _no_gc():
        return find_candidates(snapshot, req, mv, options), requested


def _json_body(snapshot, req, mv, options, requested, compact=False):
    """``(body, candidates)``."""
    cands = find_candidates(snapshot, req, mv, options)
    if compact:
        return compact_mod.body_json(snapshot, cands, mv), cands
    return render.body_json(snapshot, cands, mv, requested), cands


# Answers kept per snapshot (``memo`` entries ``('answer', ..)``): at most
# this many, and at most ANSWER_BYTES of them in all (a plain query at 5000
# hosts answers 2.4 MB; at 50,000 hosts 24 MB).
ANSWERS = 16
ANSWER_BYTES = 64 << 20


def _answer_key(params, mv, options):
    """The memo key of a deterministic answer, or None when the answer is
    randomised (then every request builds its own)."""
    if getattr(options, 'randomize_allocation_candidates', False):
        return None
    key = (
        'answer',
        mv,
        tuple((k, tuple(v)) for k, v in params.items()),
        getattr(options, 'max_allocation_candidates', -1),
        getattr(options, 'allocation_candidates_generation_strategy', None),
    )
    try:
        hash(key)
    except TypeError:  # values of an unusual type: not kept
        return None
    return key


def _keep_answer(snapshot, key, body, deps=None):
    memo = snapshot.memo
    kept = [k for k in list(memo) if k[0] == 'answer']
    total = len(body)
    for k in kept:
        total += len(memo.get(k, b''))
    if len(kept) >= ANSWERS or total > ANSWER_BYTES:
        for k in kept:
            memo.pop(k, None)
    if len(body) <= ANSWER_BYTES:
        remember(snapshot, key, body)
        if deps is not None:
            remember(snapshot, (answers.DEPS, key), deps)


def get_allocation_candidates_json(
    snapshot: Snapshot, params, microversion, options, compact=False
) -> bytes:
    """The same body as :func:`get_allocation_candidates`, serialised.

    Faster for large answers: provider summaries come pre-serialised from
    the snapshot and no intermediate dicts are built.  Everything
    allocated on the way is freed before the garbage collector is
    re-enabled, so no collection runs over it afterwards.

    A snapshot never changes (its answers neither), so the bytes of a
    deterministic answer are kept in its memo and the same query (same
    parameters in the same order, same microversion and options) on the
    same snapshot is answered with them again; a new snapshot (any write)
    starts with none. A query that fails is never kept.

    ``compact``: the body of :mod:`~nimbus.placement.candidates.compact`
    (the caller checked :func:`compact.wanted`); kept apart from the
    standard answer of the same query.
    """
    mv = tuple(microversion)
    key = _answer_key(params, mv, options)
    if key is not None and compact:
        key += (compact_mod.VERSION,)
    if key is not None:
        body = snapshot.memo.get(key)
        if body is not None:
            return body
    mv, req, requested = _prepare(snapshot, params, mv)
    with _no_gc():
        body, cands = _json_body(
            snapshot, req, mv, options, requested, compact
        )
    if key is not None:
        deps = answers.AnswerDeps(
            requested, lambda: render.uuids_of(snapshot, cands, mv)
        )
        _keep_answer(snapshot, key, body, deps)
    return body
