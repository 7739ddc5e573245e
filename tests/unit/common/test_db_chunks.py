from hypothesis import given
from hypothesis import strategies as st

from nimbus.common.db import chunks


@given(st.lists(st.text(max_size=3)), st.integers(min_value=1, max_value=7))
def test_chunks_cover_each_value_once_in_bounded_pieces(values, size):
    pieces = list(chunks.chunked(values, size))
    assert all(0 < len(p) <= size for p in pieces)
    flat = [v for p in pieces for v in p]
    assert flat == sorted(set(values))


def test_no_values_no_chunk():
    assert list(chunks.chunked([])) == []
    assert list(chunks.chunked(iter(['b', 'a', 'b']))) == [['a', 'b']]
