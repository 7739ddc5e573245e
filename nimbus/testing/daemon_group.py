"""A group of daemons (:class:`~nimbus.testing.daemons.Daemon`), watched and
stopped as one: waiting for a condition while any of them may die, and
stopping them all at once, the ones nothing depends on first.
"""

import time


def first_exit(daemons):
    """The first of ``daemons`` whose process ended by itself, or None (a
    daemon killed on purpose, -9, or stopped, 0, has not ended by itself)."""
    for daemon in daemons:
        if (
            daemon.process is not None
            and not daemon.alive()
            and daemon.process.returncode not in (-9, 0)
        ):
            return daemon
    return None


def exit_report(daemon):
    return '%s exited with %s:\n%s' % (
        daemon.name,
        daemon.process.returncode,
        daemon.tail(),
    )


def wait_for(predicate, timeout, what, daemons):
    """``predicate()``'s first true value, polled every half second for
    ``timeout`` seconds; an AssertionError naming ``what`` with the tail of
    every daemon's log when it never comes, or as soon as one of
    ``daemons`` dies (a daemon killed on purpose, -9, or stopped, 0, is
    not a death)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        dead = first_exit(daemons)
        if dead is not None:
            raise AssertionError(exit_report(dead))
        time.sleep(0.5)
    raise AssertionError(
        'timed out waiting for %s\n%s'
        % (
            what,
            '\n'.join('==> %s <==\n%s' % (d.name, d.tail()) for d in daemons),
        )
    )


# Daemons that serve no other daemon: stopped first, so none of them talks
# to a service already gone while it stops.
LEAF_MODULES = ('nimbus.cmd.compute', 'nimbus.cmd.accelerator_agent')


def stop_together(daemons, timeout=20):
    """Stop ``daemons``: the computes and agents first, then the others,
    each group all at once (SIGTERM to every member, then one wait for
    them all, kill -9 after ``timeout`` seconds). A daemon takes a second
    or more to leave its RabbitMQ listeners; one after another those waits
    added up to most of a test's teardown."""
    daemons = list(daemons)
    leaves = [d for d in daemons if d.module in LEAF_MODULES]
    for group in (leaves, [d for d in daemons if d not in leaves]):
        for daemon in group:
            daemon.terminate()
        deadline = time.monotonic() + timeout
        for daemon in group:
            daemon.wait_stopped(max(0.1, deadline - time.monotonic()))
