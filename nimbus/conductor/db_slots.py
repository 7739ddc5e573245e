"""How many of a cell conductor's RPC handlers hold a connection of the
cell database at once.

The RPC server runs up to ``[DEFAULT] executor_thread_pool_size`` (64)
handlers at a time, and in a multi-create every one of them is a build's
compare-and-swap; the engine keeps ``pool_size`` connections (10) and
opens up to ``max_overflow`` more under a burst, closing each as it comes
back to a full pool. A burst as long as a thousand builds then opened and
closed connections all along (each a TCP and MySQL handshake and, with
PyMySQL, a TLS context built from the system's certificates). The hot
handlers wait here for one of the kept connections instead; with the GIL,
more handlers at once than kept connections buy no throughput.
"""

import threading

# An engine whose pool does not say its size (SQLite's in tests).
DEFAULT = 10


def for_database(db):
    """A semaphore of as many slots as ``db``'s engine keeps connections."""
    size = getattr(db.engine.pool, 'size', None)
    try:
        count = int(size()) if callable(size) else DEFAULT
    except (TypeError, ValueError):
        count = DEFAULT
    return threading.BoundedSemaphore(max(1, count))
