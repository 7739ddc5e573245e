"""The cell conductor's check of builds that can no longer finish.

The super conductor (and a reschedule) puts ``host`` on an instance before
casting the build to that host. If the host's compute dies and never comes
back, nothing else would ever move the instance out of BUILD. Every
``[conductor] build_check_interval`` seconds a cell conductor looks at the
instances in BUILD in its cell and fails:

- those whose compute service is down: forced down, no service record, or
  no heartbeat for ``[DEFAULT] service_down_time`` seconds;
- with ``[conductor] instance_build_timeout`` set, those created in the
  cell longer ago than that;
- with ``[conductor] build_stall_timeout`` set, those whose compute never
  started them (not yet spawning) and that have not changed for that
  long: their build message was lost (taken by a compute that died, or
  dropped) or waits behind a stuck host.

A compute counts as down only from the check's own start: right after a
cell conductor restarts, every heartbeat the computes sent while it was
down is missing, and none of them is down for that.

Failing is a compare-and-swap on ``(uuid, vm_state=building, host)``: the
instance goes to ERROR with a fault naming the host, loses its host (so
any guest left on it is an orphan that the compute destroys when it comes
back), and only then is its allocation freed. A compute that comes back, or
that was only slow, loses the race cleanly: its own compare-and-swap (to
ACTIVE, or to ERROR at its startup) finds the instance out of BUILD, and it
destroys what it built.

A build whose compute is down, or a stalled build, that still has untried
alternates is not failed but rescheduled: the cell stores the request spec and the untried
alternates with each build (``instances.build_alternates``, written by the
super conductor and at every reschedule). The check takes them (a
compare-and-swap that clears them, so only one pass or conductor does),
records the interrupted attempt, frees the dead host's allocation and hands
the build to the cell conductor's walk of alternates, exactly as a compute
hands back a failed build. A timed-out build is failed, not rescheduled: its
compute is alive and may still finish it. A compute that comes back (or
takes its stale message) after its build was moved finds the instance on
another host: its compare-and-swap names its own host and loses, so it
never builds it a second time.
"""

import datetime

from oslo_log import log as logging

from nimbus.common import instance_states as states
from nimbus.common.db import types
from nimbus.db import cell_instances as instances
from nimbus.db import cell_services
from nimbus.db.cell_instances import queries as instance_queries

LOG = logging.getLogger(__name__)

COMPUTE_BINARY = 'nimbus-compute'


class BuildCheck:
    def __init__(
        self, conf, cell_db, placement, reschedule=None, started=None
    ):
        """``reschedule``: the cell conductor's ``build_instances``
        (without it, interrupted builds are failed); ``started``: when
        this conductor started (now by default)."""
        self.conf = conf
        self.started = started or types.utcnow()
        self.db = cell_db
        self.placement = placement
        self.reschedule = reschedule
        self._unfreed = set()

    def run(self, ctxt, now=None):
        """One pass. Returns ``{instance uuid: fault details}`` of the
        builds this pass failed."""
        now = now or types.utcnow()
        self._retry_frees(ctxt)
        failed = {}
        for uuid, host, node, message, details, move in self._doomed(now):
            if move and self._reschedule(
                ctxt, uuid, host, node, message, details
            ):
                continue
            with self.db.session() as session:
                if not instances.fail_build(
                    session, uuid, host, message, details
                ):
                    continue  # the compute (or a delete) got there first
                if host is not None:
                    instances.record_attempt(
                        session, uuid, host, node, 'failed', details
                    )
            LOG.warning('Instance %s: %s', uuid, details)
            failed[uuid] = details
            self._free(ctxt, uuid)
        return failed

    def _doomed(self, now):
        down_time = datetime.timedelta(seconds=self.conf.service_down_time)
        timeout = self.conf.conductor.instance_build_timeout
        with self.db.session() as session:
            building = instance_queries.building_on_hosts(session)
            if not building:
                return []
            services = cell_services.services_on_hosts(
                session, COMPUTE_BINARY, {b.host for b in building}
            )
        stall = self.conf.conductor.build_stall_timeout
        doomed = []
        for uuid, host, node, created_at, updated_at, task in building:
            changed = updated_at or created_at
            if host is None:
                # Taken off its host for a reschedule that never put it on
                # an alternate (its conductor died in between).
                if (
                    stall
                    and changed is not None
                    and now - changed > datetime.timedelta(seconds=stall)
                ):
                    doomed.append(
                        (
                            uuid,
                            None,
                            node,
                            'Build lost during its reschedule',
                            'Build lost: taken off its host for a '
                            'reschedule and on no host %d seconds later '
                            '([conductor] build_stall_timeout)' % stall,
                            False,
                        )
                    )
                continue
            service = services.get(host)
            down_since = _down_since(service, now, down_time, self.started)
            if down_since is not None:
                doomed.append(
                    (
                        uuid,
                        host,
                        node,
                        'Build interrupted: compute %s is down' % host,
                        'Build interrupted: nimbus-compute on %s '
                        'down since %s' % (host, down_since),
                        True,
                    )
                )
            elif (
                stall
                and task != states.SPAWNING
                and changed is not None
                and now - changed > datetime.timedelta(seconds=stall)
            ):
                doomed.append(
                    (
                        uuid,
                        host,
                        node,
                        'Build stalled: %s never started it' % host,
                        'Build stalled: nimbus-compute on %s did not '
                        'start the build within %d seconds ([conductor] '
                        'build_stall_timeout); its build message was '
                        'lost or is stuck' % (host, stall),
                        True,
                    )
                )
            elif (
                timeout
                and created_at is not None
                and now - created_at > datetime.timedelta(seconds=timeout)
            ):
                doomed.append(
                    (
                        uuid,
                        host,
                        node,
                        'Build timed out',
                        'Build timed out: still building on %s '
                        '%d seconds after it started ([conductor] '
                        'instance_build_timeout)' % (host, timeout),
                        False,
                    )
                )
        return doomed

    def _reschedule(self, ctxt, uuid, host, node, message, details):
        """True when the build went to its next alternates."""
        if self.reschedule is None:
            return False
        with self.db.session() as session:
            stored = instances.take_alternates(session, uuid, host)
            if stored is None:
                return False
            request_spec, host_list = stored
            instances.record_attempt(
                session, uuid, host, node, 'failed', details
            )
        LOG.warning(
            'Instance %s: %s; rescheduling to its %d remaining alternate(s)',
            uuid,
            details,
            len(host_list),
        )
        # The claim on the dead host goes first: the alternate's claim is
        # made for a consumer without allocations.
        self.placement.remove_allocations(ctxt, uuid)
        self.reschedule(
            ctxt,
            uuid,
            request_spec,
            host_list,
            failed_host=host,
            reason=details,
            taken=True,
        )
        return True

    def _free(self, ctxt, uuid):
        try:
            self.placement.remove_allocations(ctxt, uuid)
        except Exception:
            LOG.warning(
                'Could not free the allocation of %s; retrying at '
                'the next build check',
                uuid,
                exc_info=True,
            )
            self._unfreed.add(uuid)
        else:
            self._unfreed.discard(uuid)

    def _retry_frees(self, ctxt):
        for uuid in sorted(self._unfreed):
            self._free(ctxt, uuid)


def _down_since(service, now, down_time, started=None):
    """When ``service`` went down (a string), or None while it is up.
    Heartbeats missed before ``started`` (this conductor's start) do not
    count: it was not there to record them."""
    if service is None:
        return 'ever (no service record)'
    last = service.last_seen_up or service.updated_at or service.created_at
    if service.forced_down:
        return 'it was forced down (last heartbeat %s)' % (
            last.isoformat(sep=' ', timespec='seconds') if last else 'never'
        )
    if last is None:
        return 'ever (no heartbeat)'
    if now - max(last, started or last) > down_time:
        return last.isoformat(sep=' ', timespec='seconds')
    return None
