"""Where the summary rows of placement's compact answer lie in its bytes,
and which of them changed since the last answer (for
:mod:`nimbus.scheduler.compact_answer`).

The rows are the body's last member, written by placement as
``"<uuid>":[parent,root,trait set,[rc,capacity,used,..]]`` members joined
by commas; between two rows stand the four bytes ``]],"`` (the end of one
row's resources and of the row, the comma, the quote opening the next
key), which nothing inside a row contains: a row's strings are provider
uuids and the rest numbers. A row's *piece* is its text less those
separators: the first piece keeps its opening quote, the last its closing
brackets (``bytes.split`` on the separator gives the pieces).

:class:`Layout` keeps the pieces' offsets in the rows' part of the body
(``bounds``, a numpy array: piece ``i`` spans ``bounds[i]`` to
``bounds[i + 1] - 4``). :func:`follow` finds the rows of a new body that
differ from the last one's by comparing the two bodies' bytes as numpy
arrays, instead of splitting the new body into a thousand pieces: the
bytes that differ, when the rows' part has the same length, or the span
between the common prefix and the common suffix, when it has not (a
number of another width). Every piece it answers is one it found between
two separators in the new body (or at an end); every other row's piece,
with the separators around it, is byte for byte the last body's, at the
same offset or shifted by the difference in length, so it is that row
unchanged. Each answered piece is then decoded and checked by the reader
(one member, the same provider as the last body's at that place).
"""

from __future__ import annotations

import numpy as np

SEP = b']],"'
_W = len(SEP)


class Layout:
    """The rows' part of one body: ``content[start:end]``, its pieces at
    ``bounds``."""

    __slots__ = ('content', 'start', 'end', 'bounds')

    def __init__(self, content, start, end, bounds):
        self.content = content
        self.start = start
        self.end = end
        self.bounds = bounds

    @property
    def size(self) -> int:
        return self.end - self.start

    def piece(self, i) -> bytes:
        b = self.bounds
        return self.content[self.start + b[i] : self.start + b[i + 1] - _W]


def split(content, start, end):
    """``(pieces, Layout)`` of the rows in ``content[start:end]``."""
    section = content[start:end]
    pieces = section.split(SEP) if section else []
    bounds = np.zeros(len(pieces) + 1, dtype=np.int64)
    if pieces:
        np.cumsum(
            np.fromiter(map(len, pieces), np.int64, len(pieces)) + _W,
            out=bounds[1:],
        )
    return pieces, Layout(content, start, end, bounds)


def follow(last: Layout, content, start, end):
    """``(changed, pieces, Layout)``: the indexes of the rows of
    ``content[start:end]`` that may differ from ``last``'s, the new pieces
    of those rows and the new body's Layout, when the new body has the
    same rows as ``last``'s at the same places but these; None when that
    could not be shown (rows added, removed or moved: split it whole)."""
    new = Layout(content, start, end, last.bounds)
    n = len(last.bounds) - 1
    if not n:
        return None
    a = np.frombuffer(content, np.uint8, new.size, start)
    b = np.frombuffer(last.content, np.uint8, last.size, last.start)
    if new.size == last.size:
        at = np.flatnonzero(a != b)
        if not len(at):
            return [], [], new
        found = _in_place(new, at, n)
        if found is not None:
            return found
    return _span(last, new, a, b, n)


def _in_place(new, at, n):
    """The rows holding the differing bytes ``at`` (and their neighbours,
    whose separators may be among them), when every one of them still
    lies between separators at its old offsets; else None."""
    bounds = new.bounds
    rows = np.unique(np.searchsorted(bounds, at, side='right') - 1)
    rows = np.unique(np.concatenate((rows, rows + 1)))
    rows = rows[rows < n].tolist()
    content, start = new.content, new.start
    for i in rows:
        lo, hi = start + bounds[i], start + bounds[i + 1] - _W
        if i and content[lo - _W : lo] != SEP:
            return None
        if i < n - 1 and content[hi : hi + _W] != SEP:
            return None
    return rows, [new.piece(i) for i in rows], new


def _span(last, new, a, b, n):
    """The rows between the common prefix and the common suffix of the two
    rows' parts, split again; None when they are not as many as before."""
    m = min(len(a), len(b))
    ne = a[:m] != b[:m]
    p = int(ne.argmax()) if ne.any() else m
    ne = a[len(a) - m :][::-1] != b[len(b) - m :][::-1]
    s = int(ne.argmax()) if ne.any() else m
    s = min(s, m - p)
    bounds = last.bounds
    old_end = len(b) - s  # the last body's differing bytes: [p, old_end)
    i0 = max(int(np.searchsorted(bounds, p, side='right')) - 2, 0)
    i1 = min(
        int(np.searchsorted(bounds, max(old_end - 1, p), side='right')), n - 1
    )
    delta = len(a) - len(b)
    lo = int(bounds[i0])
    hi = int(bounds[i1 + 1]) - _W + delta
    if hi < lo:
        return None
    pieces = new.content[new.start + lo : new.start + hi].split(SEP)
    if len(pieces) != i1 - i0 + 1:
        return None
    starts = lo + np.cumsum(
        np.fromiter(map(len, pieces), np.int64, len(pieces)) + _W
    )
    new.bounds = np.concatenate(
        (bounds[: i0 + 1], starts[:-1], bounds[i1 + 1 :] + delta)
    )
    return list(range(i0, i1 + 1)), pieces, new
