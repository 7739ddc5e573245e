"""The thread pool of every Nimbus RPC server: futurist's, stopping promptly.

oslo.messaging's threading executor is futurist's ThreadPoolExecutor. Its
idle workers block on the work queue with a one-second timeout and notice
a shutdown only when that timeout ends, so ``server.wait()`` (after
``server.stop()``) took up to a second for any server that had handled a
message: a service stop, a daemon's SIGTERM, each in-process cloud of the
tests. Here the shutdown still lets every message already taken finish,
then hands each worker a no-op item, so an idle worker wakes at once, sees
it is to stop and exits.

It reaches into two libraries' private state: the server's
``_executor_cls`` (oslo.messaging) and the pool's ``_work_queue``,
``_workers`` and ``_shutdown`` (futurist). Both are checked when a server
is made; a release without them raises :class:`IncompatibleThreadPool`
there, in every test run, not at a daemon's stop. (It is not in
:mod:`nimbus.messaging_internals` with the rest of what reaches into
oslo.messaging: that package's multiserver imports this one's RPC
wrappers, and the import would close a cycle.)
"""

import futurist

POOL_ATTRIBUTES = ('_work_queue', '_workers', '_shutdown')


class IncompatibleThreadPool(RuntimeError):
    """The installed oslo.messaging or futurist lacks what this pool
    relies on."""


class _Wake:
    """A no-op work item: wakes the worker that takes it."""

    def run(self):
        pass


class PromptThreadPoolExecutor(futurist.ThreadPoolExecutor):
    """futurist's ThreadPoolExecutor whose shutdown does not wait out its
    idle workers' poll of the work queue."""

    def shutdown(self, wait=True, *, cancel_futures=False):
        if wait and not self._shutdown:
            # every item already queued runs first, as futurist's own
            # shutdown(wait=True) does
            self._work_queue.join()
        # the workers are told to stop (the queue is not waited for again)
        super().shutdown(wait=False, cancel_futures=cancel_futures)
        for _ in range(len(self._workers)):
            self._work_queue.put(_Wake())
        if wait:
            super().shutdown(wait=True)


def use_prompt_executor(server):
    """Make ``server`` (an oslo.messaging MessageHandlingServer with the
    threading executor, not started yet) run on
    :class:`PromptThreadPoolExecutor`. Returns ``server``."""
    if server.executor_type != 'threading':
        return server
    probe = futurist.ThreadPoolExecutor(max_workers=1)
    gone = [a for a in POOL_ATTRIBUTES if not hasattr(probe, a)]
    probe.shutdown(wait=False)
    if not hasattr(server, '_executor_cls'):
        gone.append('MessageHandlingServer()._executor_cls')
    if gone:
        raise IncompatibleThreadPool(
            'the RPC server thread pool needs %s, which the installed '
            'oslo.messaging/futurist lack' % ', '.join(gone)
        )
    server._executor_cls = PromptThreadPoolExecutor
    return server
