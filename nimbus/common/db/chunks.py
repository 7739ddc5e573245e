"""Long ``IN`` lists in pieces: a query per ``CHUNK`` values keeps every
statement under the server's parameter limits and its cost bounded."""

CHUNK = 500


def chunked(values, size=CHUNK):
    """``values`` (any iterable) as lists of at most ``size``, sorted so
    that the same set gives the same statements."""
    values = sorted(set(values))
    for start in range(0, len(values), size):
        yield values[start : start + size]
