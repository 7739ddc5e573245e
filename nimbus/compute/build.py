"""Building an instance on this host, and what happens when it fails.

The super (or cell) conductor already claimed this host's resources in
placement and put ``host``/``node`` on the instance. Here: mark the
instance spawning (compare-and-swap through the cell conductor), wait for
bound accelerator requests if any, spawn, and mark it ACTIVE. On failure:
destroy what was built, give back the allocation, record the attempt and
hand the remaining alternates to the cell conductor, which tries the next.

Every compare-and-swap of a build names this host: a build the cell
conductor moved to an alternate meanwhile (this host was frozen, or
declared down) is never taken back, and the guest built here for it is
destroyed with this host's share of the allocation only.

Each build message taken from the queue is written to the host's
:class:`~nimbus.compute.journal.BuildJournal` until it is settled, so that
after a ``kill -9`` :meth:`BuildRunner.recover` hands back exactly the
builds that were taken and leaves those still queued to arrive.
"""

from oslo_log import log as logging

from nimbus.common import instance_states as states
from nimbus.common.objects import BuildAttempt
from nimbus.common.objects import ComputeNodeRecord
from nimbus.compute import arq_wait
from nimbus.compute import group_check
from nimbus.compute import journal as journal_mod
from nimbus.compute import restart
from nimbus.compute import terminate as terminate_mod

LOG = logging.getLogger(__name__)


class BuildRunner:
    def __init__(
        self,
        conf,
        host,
        driver,
        placement,
        cell_conductor,
        events,
        tracker,
        accelerator=None,
        journal=None,
    ):
        self.conf = conf
        self.journal = journal or journal_mod.BuildJournal(
            conf.state_path, host
        )
        self.host = host
        self.driver = driver
        self.placement = placement
        self.conductor = cell_conductor
        self.events = events
        self.tracker = tracker
        self.accelerator = accelerator
        # Set when the service stops (SIGTERM): builds that have not
        # started yet are handed back to the cell conductor.
        self.draining = False

    def build(
        self, ctxt, instance, request_spec, selection, host_list, accel_uuids
    ):
        """Build, and never leave the instance in BUILD on an error of ours.

        Anything unexpected (the cell conductor unreachable even after
        retries, a bug) goes down the same road as a failed spawn: free
        the claim and hand the alternates to the cell conductor. If even
        that cannot be done, the instance stays attributed to this host and
        the next start of this compute settles it (see :meth:`recover`).
        """
        if self.draining:
            self._hand_back(ctxt, instance, request_spec, selection, host_list)
            self.journal.settled(instance.uuid)
            return
        try:
            self._build(
                ctxt, instance, request_spec, selection, host_list, accel_uuids
            )
        except Exception as exc:
            LOG.exception('Build of %s broke down', instance.uuid)
            try:
                self._fail(
                    ctxt,
                    instance.uuid,
                    selection.nodename,
                    request_spec,
                    host_list,
                    'internal error on %s: %s' % (self.host, exc),
                    providers=list(selection.allocations),
                )
            except Exception:
                LOG.exception(
                    'Could not hand %s back to the cell conductor'
                    '; it is settled at the next start',
                    instance.uuid,
                )
                return  # stays in the journal: the next start settles it
        # Not in a ``finally``: a build cut short by the process dying
        # (the fake driver's HostHalted) stays in the journal.
        self.journal.settled(instance.uuid)

    def taken(self, instance, request_spec, selection, host_list):
        """The RPC server took this build's message (before it is queued
        for a worker): journal it until it is settled. False when the
        build is under way here already (a duplicate message: drop it)."""
        try:
            return self.journal.taken(
                instance.uuid, request_spec, selection, host_list
            )
        except Exception:  # the build check still covers a lost build
            LOG.warning(
                'Could not journal the build of %s',
                instance.uuid,
                exc_info=True,
            )
            return True

    def _build(
        self, ctxt, instance, request_spec, selection, host_list, accel_uuids
    ):
        uuid = instance.uuid
        group = request_spec.instance_group
        with group_check.serialised(group.uuid if group else None):
            try:
                group_check.check(self.conductor, ctxt, self.host, uuid, group)
            except group_check.GroupPolicyViolation as exc:
                LOG.info('Build of %s refused on %s: %s', uuid, self.host, exc)
                self._fail(
                    ctxt,
                    instance.uuid,
                    selection.nodename,
                    request_spec,
                    host_list,
                    str(exc),
                    result='group-policy',
                    spawned=False,
                    providers=list(selection.allocations),
                )
                return
            current = self.conductor.instance_update(
                ctxt,
                uuid,
                [states.BUILDING],
                {
                    'task_state': states.SPAWNING,
                    'host': self.host,
                    'node': selection.nodename or self.host,
                    'compute_node_uuid': selection.compute_node_uuid,
                },
                expected_host=self.host,
            )
        if current is None:
            LOG.info(
                'Instance %s is no longer building; not spawning it', uuid
            )
            return
        try:
            accel_info = arq_wait.wait_bound(
                self.conf,
                self.accelerator,
                self.events,
                ctxt,
                uuid,
                accel_uuids,
            )
            allocations = selection.allocations
            self.driver.spawn(current, allocations, accel_info)
        except Exception as exc:  # noqa: BLE001 - the driver's failure is the build's
            LOG.warning('Build of %s failed on %s: %s', uuid, self.host, exc)
            if (
                isinstance(exc, arq_wait.AcceleratorBindFailed)
                and not self.conf.accelerator.reschedule_on_bind_failure
            ):
                host_list = []
            self._fail(
                ctxt,
                uuid,
                current.node,
                request_spec,
                host_list,
                str(exc),
                providers=list(selection.allocations),
            )
            return
        # The successful attempt is recorded with the swap (cell conductor
        # RPC 1.4): one call per build instead of two.
        done = self.conductor.instance_update(
            ctxt,
            uuid,
            [states.BUILDING],
            restart.spawned_values(),
            expected_host=self.host,
            build_attempt=BuildAttempt(
                host=self.host,
                node=selection.nodename or self.host,
                result='success',
            ),
            # Only whether it held is read (cell conductor RPC 1.16).
            brief=True,
        )
        if done is None:
            # Deleted while we spawned, failed by the cell conductor's
            # build check, or rescheduled to an alternate while this host
            # looked down: the record is theirs; the guest and this host's
            # share of the allocation are ours to remove (an alternate's
            # claim is not).
            LOG.info(
                'Instance %s left BUILD on %s during its spawn (deleted, '
                'failed or rescheduled by the build check); destroying '
                'the guest',
                uuid,
                self.host,
            )
            self.driver.destroy(uuid)
            self._free_here(ctxt, uuid, selection)
            return
        if self.tracker.failed_builds:
            self.tracker.failed_builds = 0
            self._report_failed_builds(ctxt)
        LOG.info('Instance %s is ACTIVE on %s', uuid, self.host)

    def _free_here(self, ctxt, uuid, selection):
        """Remove the consumer's allocations on the providers this build
        claimed, and no other (compare-and-swap on the consumer's
        generation in the placement client)."""
        providers = list(selection.allocations)
        try:
            if providers:
                self.placement.remove_provider_from_consumer(
                    ctxt, uuid, providers
                )
        except Exception:
            LOG.warning(
                'Could not free the allocation of %s on %s; the audit '
                'reports it',
                uuid,
                self.host,
                exc_info=True,
            )

    def _fail(
        self,
        ctxt,
        uuid,
        node,
        request_spec,
        host_list,
        reason,
        result='failed',
        spawned=True,
        providers=None,
    ):
        """Give the build back to the cell conductor for the next
        alternate. ``result`` ``failed`` counts against this host
        (BuildFailureWeigher, ``[compute]
        consecutive_build_service_disable_threshold``); ``group-policy``
        (the late group check refused it) does not. ``providers``: those
        this host's selection claimed, the only ones freed (see
        :meth:`_free_claim`)."""
        if spawned:
            try:
                self.driver.destroy(uuid)
            except Exception:
                LOG.exception('Cleaning up the failed guest %s', uuid)
        self._free_claim(ctxt, uuid, providers)
        self.conductor.record_build_attempt(
            ctxt, uuid, self.host, node, result, reason
        )
        if result == 'failed':
            self._count_failure(ctxt)
        self.conductor.build_instances(
            ctxt,
            uuid,
            request_spec,
            host_list,
            failed_host=self.host,
            reason=reason,
        )

    def _free_claim(self, ctxt, uuid, providers):
        """Free this host's claim of a build it hands on. With the
        selection's ``providers``, only those: a duplicate of this build
        that ran late (after the first copy's reschedule, before the cell
        conductor took the build off this host) must not take the claim
        the cell conductor made on an alternate meanwhile. Without them (a
        restart knows no selection), every allocation of the consumer."""
        if providers:
            self.placement.remove_provider_from_consumer(ctxt, uuid, providers)
        else:
            self.placement.remove_allocations(ctxt, uuid)

    def give_back(
        self,
        ctxt,
        instance,
        request_spec,
        host_list,
        reason,
        result,
        providers=None,
    ):
        """A build this host did not (or no longer can) start: its claim
        here is freed and the cell conductor takes it to the next
        alternate; not counted against the host. ``instance`` is the
        cell's record of it (an Instance, from ``instances_on_host``);
        ``providers`` those its selection claimed, when known."""
        self._fail(
            ctxt,
            instance.uuid,
            instance.node,
            request_spec,
            host_list,
            reason,
            result=result,
            spawned=False,
            providers=providers,
        )

    def _hand_back(self, ctxt, instance, request_spec, selection, host_list):
        """A build this stopping compute will not start: its claim here
        is given back and the cell conductor takes it to the next
        alternate. Not a failure of the host."""
        reason = (
            'nimbus-compute on %s was stopping and did not start the '
            'build' % self.host
        )
        LOG.info(
            'Handing %s back to the cell conductor: %s', instance.uuid, reason
        )
        # Deliberately like _build's _fail calls: each its own reason and result.
        try:
            self._fail(
                ctxt,
                instance.uuid,
                selection.nodename,
                request_spec,
                host_list,
                reason,
                result='handed-back',
                spawned=False,
                providers=list(selection.allocations),
            )
        except Exception:
            LOG.exception(
                'Could not hand %s back to the cell conductor; '
                'it is settled at the next start',
                instance.uuid,
            )

    def _count_failure(self, ctxt):
        """One more consecutive failure: the cell learns it at once (the
        schedulers' BuildFailureWeigher reads it from the compute node
        record), and past the threshold the service is disabled, as Nova
        does."""
        self.tracker.failed_builds += 1
        failures = self.tracker.failed_builds
        self._report_failed_builds(ctxt)
        threshold = (
            self.conf.compute.consecutive_build_service_disable_threshold
        )
        if threshold and failures >= threshold and failures % threshold == 0:
            reason = (
                'Auto-disabled due to %d consecutive build failures' % failures
            )
            LOG.error(
                'nimbus-compute on %s: %s ([compute] '
                'consecutive_build_service_disable_threshold = %d)',
                self.host,
                reason,
                threshold,
            )
            try:
                self.conductor.service_disable(
                    ctxt, self.host, 'nimbus-compute', reason
                )
            except Exception:
                LOG.exception('Could not disable the service of %s', self.host)

    def _report_failed_builds(self, ctxt):
        try:
            self.conductor.compute_node_update(
                ctxt,
                ComputeNodeRecord.of(
                    self.tracker.node_uuid,
                    self.host,
                    hypervisor_hostname=self.tracker.nodename,
                    failed_builds=self.tracker.failed_builds,
                ),
            )
        except Exception:  # the next periodic report carries it too
            LOG.warning(
                'Could not report the failed build count of %s',
                self.host,
                exc_info=True,
            )

    def terminate(self, ctxt, instance_uuid):
        """See :func:`nimbus.compute.terminate.terminate`."""
        return terminate_mod.terminate(self, ctxt, instance_uuid)

    def recover(self, ctxt):
        """After a restart: settle the builds that were interrupted (see
        :func:`nimbus.compute.restart.recover`)."""
        return restart.recover(self, ctxt)

    def destroy_orphans(self, instances, guests=None):
        """Destroy guests that no live instance on this host owns (see
        :func:`nimbus.compute.restart.destroy_orphans`)."""
        return restart.destroy_orphans(self, instances, guests)
