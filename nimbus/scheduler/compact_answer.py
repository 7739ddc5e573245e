"""Reading placement's compact answer (``X-Nimbus-Candidates: compact-1``)
row by row, decoding only the rows that changed since the last answer.

At 1000 hosts the answer is about 155 kB: a head (the allocation requests,
mostly provider uuids, and the resource-class and trait tables) and one
summary row per provider, which placement writes once per snapshot and
copies into every answer (``nimbus.placement.candidates.compact``). Two
successive answers to the boots of one flavor differ in a row or two (the
host the last boot claimed on). Decoding the whole body with
``orjson.loads`` made two lists per row, about 2000 containers per boot
that stayed alive until the next answer replaced them: the daemon's cyclic
garbage collector then ran several times per boot and, every few dozen
boots, walked the whole heap (about 0.1 s each time), which made the
decode the scheduler's largest cost per boot (4-5 ms at 1000 hosts).

:class:`Reader` instead compares the new body's bytes with the last
one's (numpy, in C: :func:`answer_rows.follow`) and decodes only the rows
whose bytes differ; the head is decoded again only when its bytes differ.
The decoded rows of the unchanged providers are the last answer's very
objects, so a boot allocates a handful of containers for the answer and
spends about 0.1 ms reading it. The first answer, and one that lists
other providers or lists them in another order, is split into its rows
(``bytes.split``) and every row decoded.

Every row that is decoded is checked to be exactly one member,
``"<provider uuid>": [parent, root, trait set, [rc, capacity, used, ..]]``
(and, when followed from the last answer, of the same provider as there);
a row whose bytes are the last answer's was checked when that one was
read. Anything else (another layout of the body, a malformed row) is read
by ``orjson.loads`` as before (:func:`compact_candidates.expand`), so the
result never depends on how placement laid the bytes out. :class:`Rows`
answers what :class:`compact_candidates.Summaries` answers, the same way.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Mapping

import orjson

from nimbus.common.clients import compact_candidates
from nimbus.common.clients import placement as placement_client
from nimbus.common.clients import placement_candidates
from nimbus.scheduler import answer_rows

# The REST client's own reading of the compact answer, which fetcher()
# replaces with a Reader's.
_CLIENT_FETCH = placement_candidates.CandidateCalls.get_compact_candidates

# The rows are the body's last member, one ``"uuid":[..]`` per provider.
_MARK = b',"provider_summaries":{'
_END = b'}}'


class Unreadable(ValueError):
    """The body is not laid out as this reader expects: read it whole."""


def _row(piece, i, n):
    """``(uuid, row)`` of ``piece``, the ``i``-th of ``n`` (see
    answer_rows); Unreadable unless it is exactly one well-formed
    member."""
    text = b''.join(
        (b'{' if i == 0 else b'{"', piece, b'}' if i == n - 1 else b']]}')
    )
    try:
        member = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise Unreadable(str(exc)) from exc
    if len(member) != 1:
        raise Unreadable('a piece holds %d rows' % len(member))
    ((rp, row),) = member.items()
    if (
        row.__class__ is not list
        or len(row) != 4
        or row[3].__class__ is not list
        or len(row[3]) % 3
        or row[2].__class__ is not int
    ):
        raise Unreadable('provider %s: not a summary row' % rp)
    return rp, row


class Rows(Mapping):
    """``{provider uuid: standard provider summary}`` of one compact answer,
    built lazily, with :class:`compact_candidates.Summaries`' ``root``,
    ``key`` and ``changed_since``."""

    __slots__ = (
        '_uuids',
        '_at',
        '_rows',
        '_rcs',
        '_traits',
        '_built',
        '_diff',
    )

    def __init__(self, uuids, at, rows, rcs, traits):
        self._uuids = uuids  # provider uuids, in the answer's order
        self._at = at  # uuid -> its index
        self._rows = rows  # the rows decoded (the unchanged ones shared)
        self._rcs = rcs
        self._traits = traits
        self._built: dict = {}
        self._diff = None  # (before, its changed_since answer)

    def __getitem__(self, rp):
        summary = self._built.get(rp)
        if summary is None:
            summary = self._built[rp] = compact_candidates.summary_of(
                self._rows[self._at[rp]], self._rcs, self._traits
            )
        return summary

    def get(self, rp, default=None):
        if rp in self._at:
            return self[rp]
        return default

    def __contains__(self, rp):
        return rp in self._at

    def __iter__(self):
        return iter(self._uuids)

    def __len__(self):
        return len(self._uuids)

    def root(self, rp):
        """The root provider of ``rp`` (``rp`` itself when not listed)."""
        i = self._at.get(rp)
        return (i is not None and self._rows[i][1]) or rp

    def key(self, rp):
        """What ``rp``'s summary is made of, comparable across answers:
        equal keys mean equal summaries (resources and traits)."""
        _parent, _root, j, res = self._rows[self._at[rp]]
        return (self._rcs, res, self._traits[j])

    def changed_since(self, before):
        """As :meth:`compact_candidates.Summaries.changed_since`:
        ``(changed, roots_moved)`` against ``before`` (an earlier Rows),
        None when the two are not comparable provider by provider."""
        if before is None or before.__class__ is not Rows:
            return None
        diff = self._diff
        if diff is not None and diff[0] is before:
            return diff[1]
        before._diff = None  # no chain of answers is kept
        found = None
        if (
            self._rcs == before._rcs
            and self._traits == before._traits
            and self._uuids == before._uuids
        ):
            # an unchanged row is the very list: compared at once
            maybe = itertools.compress(
                range(len(self._rows)),
                map(operator.ne, self._rows, before._rows),
            )
            found = _exact(maybe, self._rows, before._rows, self._uuids)
        self._diff = (before, found)
        return found


class Reader:
    """Reads successive compact answers, each against the last one read
    (not thread-safe: the scheduler reads one answer at a time)."""

    def __init__(self):
        # of the last answer read: (head bytes, the body but its rows,
        # its tables, its Rows, its answer_rows.Layout)
        self._last = None

    def forget(self) -> None:
        self._last = None

    def read(self, content: bytes) -> dict:
        """The body of a compact answer, in :func:`compact_candidates.
        expand`'s shape, with :class:`Rows` as its provider summaries."""
        last, self._last = self._last, None
        try:
            self._last = _read(content, last)
        except Unreadable:
            return compact_candidates.expand(orjson.loads(content))
        return dict(self._last[1], provider_summaries=self._last[3])


def _read(content, last):
    if not content.endswith(_END):
        raise Unreadable('no provider summaries at the end')
    if (
        last is not None
        and content.startswith(_MARK, len(last[0]))
        and content.startswith(last[0])
    ):
        # the same head as the last answer's: no search, no decode
        at = len(last[0])
        head_bytes, shell, tables = last[0], last[1], last[2]
    else:
        at = content.rfind(_MARK)
        if at < 0:
            raise Unreadable('no provider summaries')
        head_bytes = content[:at]
        shell, tables = _shell(head_bytes, last and last[2])
    start, end = at + len(_MARK), len(content) - len(_END)
    found = None
    if last is not None and (last[3]._rcs, last[3]._traits) == tables:
        found = _follow(last[3], last[4], content, start, end)
    if found is None:
        found = _whole(content, start, end, tables)
    return (head_bytes, shell, tables) + found


def _follow(last, layout, content, start, end):
    """``(Rows, Layout)`` of the rows of ``content[start:end]`` from
    ``last`` (Rows) and ``layout`` (their Layout), decoding only the rows
    whose bytes differ; None when the rows are not the same providers at
    the same places (read them whole)."""
    found = answer_rows.follow(layout, content, start, end)
    if found is None:
        return None
    changed, pieces, layout = found
    uuids = last._uuids
    n = len(uuids)
    old = last._rows
    rows = list(old)
    for i, piece in zip(changed, pieces, strict=True):
        try:
            rp, row = _row(piece, i, n)
        except Unreadable:
            return None  # not that row any more: read them all
        if rp != uuids[i]:
            return None
        if row != old[i]:  # else the last answer's very row stays
            rows[i] = row
    new = Rows(uuids, last._at, rows, last._rcs, last._traits)
    last._diff = None  # no chain of answers is kept
    new._diff = (last, _exact(changed, rows, last._rows, uuids))
    return new, layout


def _whole(content, start, end, tables):
    """``(Rows, Layout)`` of the rows of ``content[start:end]``, every
    row decoded."""
    pieces, layout = answer_rows.split(content, start, end)
    n = len(pieces)
    uuids, rows = [], []
    for i, piece in enumerate(pieces):
        rp, row = _row(piece, i, n)
        uuids.append(rp)
        rows.append(row)
    index = {rp: i for i, rp in enumerate(uuids)}
    if len(index) != n:
        raise Unreadable('a provider is listed twice')
    return Rows(uuids, index, rows, *tables), layout


def _shell(head_bytes, tables):
    """The body but its rows, as :func:`compact_candidates.expand` gives
    it, and its resource-class and trait-set tables (``tables``, the last
    answer's, when they are equal: comparing keys then compares
    identities), from the bytes before the rows."""
    try:
        head = orjson.loads(head_bytes + b'}')
    except orjson.JSONDecodeError as exc:
        raise Unreadable(str(exc)) from exc
    if (
        head.__class__ is not dict
        or head.get('compact') != 1
        or 'provider_summaries' in head
    ):
        raise Unreadable('not a compact answer')
    flat = head.get('flat')
    shell = {
        'allocation_requests': head.get('allocation_requests', []),
        'flat_request': None
        if flat is None
        else compact_candidates.FlatRequest(flat['resources'], flat['suffix']),
    }
    new = (
        tuple(head.get('resource_classes', ())),
        [tuple(t) for t in head.get('trait_sets', ())],
    )
    if tables is not None and tables == new:
        return shell, tables
    return shell, new


def _exact(maybe, rows, old_rows, uuids):
    """``changed_since``'s answer from the indexes ``maybe`` whose bytes
    differ (a row written otherwise may still be equal)."""
    at = [i for i in maybe if rows[i] != old_rows[i]]
    moved = any(rows[i][:2] != old_rows[i][:2] for i in at)
    return [uuids[i] for i in at], moved


def fetcher(placement, reader):
    """``fetch(ctxt, params) -> body``: placement's compact answer read by
    ``reader`` when ``placement`` is Nimbus's REST client
    (:class:`~nimbus.common.clients.placement.PlacementClient`) with its
    own ``get_compact_candidates`` (not one a subclass or a test put in
    its place), else its ``get_compact_candidates`` when it has one, else
    its standard answer."""
    fetch = getattr(placement, 'get_compact_candidates', None)
    if (
        isinstance(placement, placement_client.PlacementClient)
        and getattr(fetch, '__func__', None) is _CLIENT_FETCH
    ):

        def fetch(ctxt, params):
            # as CandidateCalls.get_compact_candidates, but read by reader
            response = placement.compact_candidates_response(ctxt, params)
            if placement_candidates.is_compact(response):
                return reader.read(response.content)
            reader.forget()
            return orjson.loads(response.content)

        return fetch
    if fetch is None:
        fetch = placement.get_allocation_candidates
    return fetch
