"""answer_rows.follow finds the rows of a compact answer that differ from
the last answer's without splitting the body, and never answers pieces
that are not the new body's rows."""

import orjson
from hypothesis import given, settings, strategies as st

from nimbus.scheduler import answer_rows

PREFIX = b'{"compact":1,"provider_summaries":{'


def _uuid(i):
    return '%08d-0000-4000-8000-%012d' % (i, i)


def _content(rows):
    body = orjson.dumps({'compact': 1, 'provider_summaries': rows})
    assert body.startswith(PREFIX)
    return body


def _layout(rows):
    content = _content(rows)
    return answer_rows.split(content, len(PREFIX), len(content) - 2)


def _rows(used):
    return {
        _uuid(i): [None, _uuid(i), 0, [0, 64, u, 1, 4096, 7]]
        for i, u in enumerate(used)
    }


def _pieces_of(rows):
    return _layout(rows)[0]


def test_split_gives_the_pieces_and_their_offsets():
    pieces, layout = _layout(_rows([1, 22, 333]))
    assert len(pieces) == 3
    assert pieces[0].startswith(b'"') and pieces[-1].endswith(b']]')
    assert [layout.piece(i) for i in range(3)] == pieces
    assert answer_rows.split(b'{}', 1, 1)[0] == []


def _followed(old, new):
    _p, last = _layout(old)
    content = _content(new)
    return answer_rows.follow(last, content, len(PREFIX), len(content) - 2)


def test_a_row_of_the_same_width():
    changed, pieces, layout = _followed(
        _rows([1, 2, 3, 4]), _rows([1, 2, 5, 4])
    )
    assert 2 in changed
    want = _pieces_of(_rows([1, 2, 5, 4]))
    assert pieces == [want[i] for i in changed]
    assert [layout.piece(i) for i in range(4)] == want


def test_a_row_of_another_width():
    for new in (
        [1, 20, 300, 4],
        [1, 20, 3, 400],
        [100, 20, 3, 4],
        [1, 0, 3, 4],
    ):
        changed, pieces, layout = _followed(_rows([1, 20, 3, 4]), _rows(new))
        want = _pieces_of(_rows(new))
        assert pieces == [want[i] for i in changed]
        assert [layout.piece(i) for i in range(4)] == want
        assert len(changed) <= 3


def test_two_rows_that_cancel_their_widths():
    """Same length, the rows between the two shifted: the pieces at the
    old offsets are not rows any more, so the span between is split."""
    old, new = _rows([10, 2, 3, 4, 5]), _rows([1, 2, 3, 4, 50])
    changed, pieces, layout = _followed(old, new)
    want = _pieces_of(new)
    assert pieces == [want[i] for i in changed]
    assert [layout.piece(i) for i in range(5)] == want


def test_nothing_changed():
    assert _followed(_rows([1, 2]), _rows([1, 2]))[:2] == ([], [])


def test_rows_added_or_removed_are_not_followed():
    assert _followed(_rows([1, 2, 3]), _rows([1, 2])) is None
    assert _followed(_rows([1, 2]), _rows([1, 2, 3])) is None
    assert _followed({}, _rows([1])) is None


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.integers(0, 10**6), min_size=1, max_size=8),
        min_size=2,
        max_size=5,
    )
)
def test_followed_pieces_are_the_new_bodys(answers):
    """Whatever the widths: when follow answers, the layout's pieces are
    exactly what splitting the new body gives, and every piece it did not
    answer is byte for byte the last body's."""
    _p, layout = _layout(_rows(answers[0]))
    last_pieces = _pieces_of(_rows(answers[0]))
    for used in answers[1:]:
        rows = _rows(used)
        content = _content(rows)
        found = answer_rows.follow(
            layout, content, len(PREFIX), len(content) - 2
        )
        want = _pieces_of(rows)
        if found is None:
            assert len(want) != len(last_pieces)
            _p, layout = _layout(rows)
        else:
            changed, pieces, layout = found
            assert [layout.piece(i) for i in range(len(want))] == want
            assert pieces == [want[i] for i in changed]
            for i, piece in enumerate(want):
                if i not in changed:
                    assert piece == last_pieces[i]
        last_pieces = want
