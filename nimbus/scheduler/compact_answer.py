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

:class:`Reader` instead splits the rows' part of the body into one
``bytes`` piece per provider (``bytes.split`` on the text between two
rows, in C; bytes are not tracked by the collector), compares the pieces
with the last answer's (``map(operator.ne)``, in C) and decodes only the
ones that differ; the head is decoded again only when its bytes differ.
The decoded rows of the unchanged providers are the last answer's very
objects, so a boot allocates a handful of containers for the answer.

Every piece that is decoded is checked to be exactly one member,
``"<provider uuid>": [parent, root, trait set, [rc, capacity, used, ..]]``,
and a piece equal to the last answer's piece at the same place was checked
when that one was decoded; anything else (another layout of the body, a
malformed row) is read by ``orjson.loads`` as before
(:func:`compact_candidates.expand`), so the result never depends on how
placement laid the bytes out. :class:`Rows` answers what
:class:`compact_candidates.Summaries` answers, the same way.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Mapping

import orjson

from nimbus.common.clients import compact_candidates
from nimbus.common.clients import placement as placement_client
from nimbus.common.clients import placement_candidates

# The REST client's own reading of the compact answer, which fetcher()
# replaces with a Reader's.
_CLIENT_FETCH = placement_candidates.CandidateCalls.get_compact_candidates

# The rows are the body's last member, one ``"uuid":[..]`` per provider.
_MARK = b',"provider_summaries":{'
_END = b'}}'
# Between two rows: the end of one (its resources list, then itself) and
# the quote opening the next one's key.
_SEP = b']],"'


class Unreadable(ValueError):
    """The body is not laid out as this reader expects: read it whole."""


def _row(pieces, i, n):
    """``(uuid, row)`` of piece ``i`` of ``n``; Unreadable unless it is
    exactly one well-formed member."""
    piece = pieces[i]
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
        '_pieces',
        '_rows',
        '_rcs',
        '_traits',
        '_built',
        '_diff',
    )

    def __init__(self, uuids, at, pieces, rows, rcs, traits):
        self._uuids = uuids  # provider uuids, in the answer's order
        self._at = at  # uuid -> its index
        self._pieces = pieces  # the rows as placement wrote them
        self._rows = rows  # the rows decoded
        self._rcs = rcs
        self._traits = traits
        self._built: dict = {}
        self._diff = None  # (before, its changed_since answer)

    def __getitem__(self, rp):
        summary = self._built.get(rp)
        if summary is None:
            parent, root, j, res = self._rows[self._at[rp]]
            rcs = self._rcs
            summary = self._built[rp] = {
                'resources': {
                    rcs[res[i]]: {'capacity': res[i + 1], 'used': res[i + 2]}
                    for i in range(0, len(res), 3)
                },
                'traits': list(self._traits[j]),
                'parent_provider_uuid': parent,
                'root_provider_uuid': root,
            }
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
            maybe = itertools.compress(
                range(len(self._pieces)),
                map(operator.ne, self._pieces, before._pieces),
            )
            found = _exact(maybe, self._rows, before._rows, self._uuids)
        self._diff = (before, found)
        return found


class Reader:
    """Reads successive compact answers, each against the last one read
    (not thread-safe: the scheduler reads one answer at a time)."""

    def __init__(self):
        # (head bytes, the body but its rows, tables, Rows) of the last
        # answer read
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
    section = content[at + len(_MARK) : -len(_END)]
    pieces = section.split(_SEP) if section else []
    rows = _rows(pieces, tables, last and last[3])
    return head_bytes, shell, tables, rows


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


def _rows(pieces, tables, last):
    """The :class:`Rows` of ``pieces``, reusing ``last``'s (a Rows, or
    None) where the pieces are the same."""
    rcs, traits = tables
    n = len(pieces)
    if (
        last is not None
        and len(last._pieces) == n
        and last._rcs == rcs
        and last._traits == traits
    ):
        uuids, index = last._uuids, last._at
        rows = list(last._rows)
        changed = list(
            itertools.compress(
                range(n), map(operator.ne, pieces, last._pieces)
            )
        )
        for i in changed:
            rp, rows[i] = _row(pieces, i, n)
            if rp != uuids[i]:
                break  # another provider: read them all
        else:
            new = Rows(uuids, index, pieces, rows, rcs, traits)
            last._diff = None  # no chain of answers is kept
            new._diff = (last, _exact(changed, rows, last._rows, uuids))
            return new
    uuids, rows = [], []
    for i in range(n):
        rp, row = _row(pieces, i, n)
        uuids.append(rp)
        rows.append(row)
    index = {rp: i for i, rp in enumerate(uuids)}
    if len(index) != n:
        raise Unreadable('a provider is listed twice')
    return Rows(uuids, index, pieces, rows, rcs, traits)


def _exact(maybe, rows, old_rows, uuids):
    """``changed_since``'s answer from the indexes ``maybe`` whose pieces
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
        header = compact_candidates.HEADER
        version = compact_candidates.VERSION

        def fetch(ctxt, params):
            # as CandidateCalls.get_compact_candidates, but read by reader
            response = placement._check(
                placement.request(
                    ctxt,
                    'GET',
                    '/allocation_candidates',
                    params=list(params),
                    extra_headers={header: version},
                ),
                'allocation candidates',
            )
            if response.headers.get(header) == version:
                return reader.read(response.content)
            reader.forget()
            return orjson.loads(response.content)

        return fetch
    if fetch is None:
        fetch = placement.get_allocation_candidates
    return fetch
