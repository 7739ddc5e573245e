"""Schedule leases: which super conductor worker schedules a build request.

oslo.messaging acknowledges ``schedule_and_build_instances`` when a super
conductor takes it, before it runs: a conductor killed mid-schedule loses
the message, and its build requests would wait forever. So a worker first
takes a lease on each build request, a compare-and-swap on the API
database (``build_requests.schedule_token`` and ``schedule_started_at``)
that succeeds only for a build request with no lease or an expired one
(older than ``[conductor] build_request_timeout``). It ends the lease by
deleting the build request under the same token when the instance is in
its cell (or buried in cell0): a worker whose lease was taken over
commits nothing, so one build request is built once.

The recovery pass (:mod:`nimbus.conductor.recovery`) schedules again the
build requests whose lease expired, or that were never leased that long
after they were created (their message was lost): taking the lease over
is what makes that safe against a worker still under way, and against a
second super conductor doing the same.
"""

import datetime

from oslo_utils import uuidutils
from oslo_config import cfg

from nimbus.common.db import types
from nimbus.db import build_requests
from nimbus.db import instance_mappings

# [conductor] build_request_timeout's default, for a conductor built
# without that option (tests, tools).
DEFAULT_TIMEOUT = 300


def timeout(conf):
    """``[conductor] build_request_timeout`` of ``conf``."""
    try:
        return int(conf.conductor.build_request_timeout)
    except (AttributeError, cfg.Error):  # no [conductor] options
        return DEFAULT_TIMEOUT


def _expired(now, seconds):
    return now - datetime.timedelta(seconds=seconds)


def take(api_db, uuids, seconds, now=None):
    """Lease the build requests of ``uuids`` that nobody holds (or whose
    lease is older than ``seconds``). Returns ``(token, {uuid: previous
    token or None})`` of those taken. A uuid without a build request (its
    user deleted it) is returned as taken, with nothing to lease: the
    schedule finds it gone and releases its claim, as before leases. One
    whose instance is mapped to a cell is not taken: its build request
    ended because a worker put it in its cell (or buried it in cell0), so
    this is a duplicate or late copy of the message, and the claim it
    would find belongs to the instance."""
    now = now or types.utcnow()
    token = uuidutils.generate_uuid()
    taken = {}
    with api_db.session() as session:
        # The free ones in one statement (a multi-create's 1000 took 9 s
        # one by one), then every lease read back: ours where it won, the
        # holder's where somebody holds it (expired or not: those are
        # swapped one by one below), none for a build request gone.
        held = build_requests.take_free_leases(session, uuids, token, now)
        gone = [u for u in uuids if u not in held]
        in_cells = (
            {uuid for uuid, _cell in instance_mappings.cells_of(session, gone)}
            if gone
            else set()
        )
        for uuid in uuids:
            if uuid in in_cells:
                continue  # built or buried already: nothing to schedule
            if uuid not in held or held[uuid] == token:
                taken[uuid] = None
                continue
            if held[uuid] is None:
                continue  # appeared after the statement: not leased
            if build_requests.take_lease(
                session, uuid, held[uuid], token, now, _expired(now, seconds)
            ):
                taken[uuid] = held[uuid]
    return token, taken


def holds(session, uuid, token):
    """Does ``token`` still hold the lease of ``uuid``'s build request?
    (Always true without a token: a caller that took no lease.)"""
    if token is None:
        return True
    return build_requests.holds_lease(session, uuid, token)


def finish(session, uuid, token):
    """Delete the build request under our lease: the instance is in its
    cell. False when the lease was taken over (or the build request is
    gone): then nothing is deleted and the caller commits nothing."""
    return build_requests.delete_leased(session, uuid, token)


def lease_build_requests(ctxt, api_db, placement, uuids, conf, log):
    """For a worker about to schedule ``uuids``: take their leases, and
    release the claims a worker whose lease expired may have left (no
    instance of theirs is in a cell: it would have ended the lease).
    Returns ``(token, the uuids leased)``; ``log`` is the caller's
    logger (one line per build request not leased or taken over)."""
    try:
        token, taken = take(api_db, uuids, timeout(conf))
    except Exception as exc:  # noqa: BLE001 - the API database is unreachable
        # The API database is unreachable: schedule without leases, as
        # before them (what follows needs the database too, and says so).
        log.warning(
            'Could not lease build requests %s (%s); scheduling them '
            'without a lease',
            uuids,
            exc,
        )
        return None, list(uuids)
    for uuid in uuids:
        if uuid not in taken:
            log.info(
                'Build request %s is already being scheduled (or its '
                'instance is in a cell); not scheduling it again',
                uuid,
            )
        elif taken[uuid] is not None:
            log.warning(
                'Build request %s: taking over the expired schedule lease '
                '%s; releasing whatever claim it left',
                uuid,
                taken[uuid],
            )
            placement.remove_allocations(ctxt, uuid)
    return token, [u for u in uuids if u in taken]
