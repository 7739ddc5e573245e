"""Work of many hosts in batches, with each host's own request behind.

The simulated computes (:mod:`nimbus.compute.simulated`) and the
accelerator agents (:mod:`nimbus.accelerator.agent.group`) start many
hosts in one process: they send what the hosts' starts would send one by
one (heartbeats, node records, provider trees, devices) in a few calls.
A batch that fails is no error: it is logged, and each of its hosts then
does its own, as a host started alone does.
"""


def failed(log, what, count, exc, fallback):
    """Log, on ``log``, that ``what`` (``'Writing the provider trees'``)
    of ``count`` hosts failed with ``exc``, and what each host does
    instead (``fallback``: ``'writes its own'``)."""
    log.warning(
        '%s of %d hosts failed (%s: %s); each host %s',
        what,
        count,
        type(exc).__name__,
        exc,
        fallback,
    )


def sent(items, size, send, log, what, fallback):
    """Call ``send(batch)`` for ``items``, ``size`` at a time, and yield
    ``(batch, what send returned)`` for each batch that went through; a
    batch that fails is logged (:func:`failed`) and left to its hosts."""
    for start in range(0, len(items), size):
        batch = items[start : start + size]
        try:
            result = send(batch)
        except Exception as exc:  # noqa: BLE001 - its hosts then do their own
            failed(log, what, len(batch), exc, fallback)
            continue
        yield batch, result
