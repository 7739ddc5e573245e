"""nimbus-compute as a plain class with its dependencies injected."""

import threading

from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_utils import importutils

from nimbus.common import context as nimbus_context
from nimbus.common import instance_states as states
from nimbus.common import rpc
from nimbus.common import service
from nimbus.compute import action_journal
from nimbus.compute import build
from nimbus.compute import events as events_mod
from nimbus.compute import exception
from nimbus.compute import guest_actions
from nimbus.compute import live_migration
from nimbus.compute import manager
from nimbus.compute import move_arqs
from nimbus.compute import move_restart
from nimbus.compute import resize
from nimbus.compute import resource_tracker
from nimbus.compute import shelve as shelve_mod
from nimbus.compute import rpcapi
from nimbus.compute.virt import fake

LOG = logging.getLogger(__name__)

BINARY = 'nimbus-compute'


def load_driver(conf, host):
    name = conf.compute.compute_driver
    if name == 'fake':
        return fake.FakeDriver(conf, host)
    return importutils.import_object(name, conf, host)


class ComputeService:
    """One compute host: driver, tracker, builds, heartbeats, RPC server.

    ``cell_transport`` is the bus of the compute's cell; ``placement`` a
    PlacementClient; ``cell_conductor`` a CellConductorAPI on that bus.
    ``pool``: an executor shared by the simulated hosts of a process
    (:mod:`nimbus.compute.simulated`); with it the host runs builds there
    and :meth:`start` neither serves RPC nor starts periodic threads: the
    host group serves :attr:`endpoints` and runs :meth:`periodic_tasks`.
    """

    def __init__(
        self,
        conf,
        host,
        cell_transport,
        placement,
        cell_conductor,
        driver=None,
        accelerator=None,
        pool=None,
        on_fatal=None,
        batched_heartbeat=False,
        registered=False,
    ):
        """``on_fatal(reason)``: called when the service stopped itself
        (a reshape during a periodic update); the daemon exits with it.
        ``batched_heartbeat``: the process sends this host's periodic
        heartbeat with its other hosts' in one call (see
        :mod:`nimbus.compute.simulated`), so :meth:`periodic_tasks` leaves
        it out; :attr:`alive` says whether it belongs in the batch.
        ``registered``: that batch already carried this host's first
        heartbeat (its service record exists and is up), so :meth:`start`
        does not send one of its own."""
        self.conf = conf
        self.on_fatal = on_fatal
        self.fatal = None
        self.host = host
        self.transport = cell_transport
        self.placement = placement
        self.conductor = cell_conductor
        self.driver = driver or load_driver(conf, host)
        self.events = events_mod.InstanceEvents()
        self.tracker = resource_tracker.ResourceTracker(
            conf, host, self.driver, placement, cell_conductor
        )
        self._grouped = pool is not None
        self.batched_heartbeat = batched_heartbeat
        self.registered = registered
        self.runner = build.BuildRunner(
            conf,
            host,
            self.driver,
            placement,
            cell_conductor,
            self.events,
            self.tracker,
            accelerator,
        )
        self.manager = manager.ComputeManager(
            self.runner,
            self.events,
            conf.compute.build_workers,
            pool=pool,
            guest_actions=guest_actions.GuestActions(
                host,
                self.driver,
                cell_conductor,
                action_journal.ActionJournal(conf.state_path, host),
            ),
            resizes=resize.Resizes(
                host,
                self.driver,
                cell_conductor,
                placement,
                rpcapi.ComputeAPI(cell_transport, conf),
                move_arqs.MoveArqs(conf, accelerator, self.events),
            ),
            live=live_migration.LiveMigrations(
                host,
                self.driver,
                cell_conductor,
                placement,
                rpcapi.ComputeAPI(cell_transport, conf),
                conf,
                move_arqs.MoveArqs(conf, accelerator, self.events),
            ),
        )
        self._server = None
        self._stop = threading.Event()
        self._periodics = []
        # Set by the host group when the cell named this host in no
        # record just before its periodic update (:meth:`expect_quiet`).
        self._quiet_update = False
        # Set by the host group from one read made for a slice of its
        # hosts just before their periodic update (:meth:`expect_instances`):
        # the instances the cell places here, and the list the update's
        # node record goes to (sent for the slice in one call).
        self._known_instances = None
        self._node_batch = None

    def start(self):
        ctxt = nimbus_context.get_admin_context()
        self.driver.init_host()
        if not self.registered:
            self.conductor.service_heartbeat(ctxt, self.host, BINARY)
        try:
            instances = self._recover(ctxt)
        finally:
            # A conductor API that answered the recovery reads from one
            # check made for many hosts (nimbus.compute.simulated) asks
            # the cell again from here on.
            end_startup = getattr(self.conductor, 'end_startup', None)
            if end_startup is not None:
                end_startup()
        # Placement first: the node record then carries placement's ratios.
        try:
            self.tracker.update(ctxt, startup=True)
        except exception.ReshapeFailed as exc:
            LOG.critical(
                'nimbus-compute %s cannot start: the reshape of its '
                'provider tree failed (%s). Placement is unchanged;'
                ' fix the cause and start it again.',
                self.host,
                exc,
            )
            raise
        self.tracker.report_node(
            ctxt, [i for i in instances if i.vm_state != states.DELETED]
        )
        if self._grouped:
            LOG.debug('nimbus-compute %s started', self.host)
            return self
        self._server = rpc.get_server(
            self.transport,
            rpcapi.TOPIC,
            [self.manager],
            self.host,
            rpcapi.VERSION,
        )
        self._server.start()
        for interval, func in self.periodic_tasks():
            self._periodic(interval, func)
        LOG.info('nimbus-compute %s started', self.host)
        return self

    def _recover(self, ctxt):
        instances = self.runner.recover(ctxt)
        self.manager.actions.recover(ctxt, instances)
        # Moves this host was in the middle of (issue 24, section 3).
        move_restart.recover(
            self.manager.resizes, self.runner, ctxt, instances
        )
        # Evacuated away while this host was down: finish their cleanup.
        shelve_mod.clean_evacuated(self.runner, ctxt)
        # Live migrations away from here cut by the restart: rolled back.
        live_migration.recover(self.manager.live, ctxt)
        return instances

    @property
    def endpoints(self):
        return [self.manager]

    @property
    def alive(self):
        """Running: neither stopped, killed nor stopped by itself."""
        return not self._stop.is_set()

    def periodic_tasks(self):
        """``[(interval, callable)]``: heartbeat (unless batched) and
        resource update."""
        tasks = [
            (
                self.conf.compute.update_resources_interval,
                self._update_resources,
            )
        ]
        if not self.batched_heartbeat:
            tasks.insert(0, (self.conf.report_interval, self.heartbeat))
        if self.conf.reclaim_instance_interval > 0:
            tasks.append((self.conf.reclaim_instance_interval, self.reclaim))
        if (
            self.conf.shelved_offload_time > 0
            and self.conf.shelved_poll_interval > 0
        ):
            tasks.append(
                (self.conf.shelved_poll_interval, self.offload_shelved)
            )
        if self.conf.resize_confirm_window > 0:
            tasks.append((self.conf.resize_confirm_window, self.auto_confirm))
        return tasks

    def offload_shelved(self):
        """Offload the servers of this host shelved longer than
        ``[DEFAULT] shelved_offload_time`` seconds."""
        self.manager.moves.offload_expired(
            nimbus_context.get_admin_context(), self.conf.shelved_offload_time
        )

    def auto_confirm(self):
        """Confirm the resizes that waited on this host longer than
        ``[DEFAULT] resize_confirm_window`` seconds."""
        self.manager.resizes.auto_confirm(
            nimbus_context.get_admin_context(), self.conf.resize_confirm_window
        )

    def reclaim(self):
        """Delete for good the servers of this host soft-deleted more
        than ``[DEFAULT] reclaim_instance_interval`` seconds ago."""
        ctxt = nimbus_context.get_admin_context()
        for uuid in self.conductor.reclaimable(
            ctxt, self.host, self.conf.reclaim_instance_interval
        ):
            LOG.info('Reclaiming soft-deleted instance %s', uuid)
            self.runner.terminate(ctxt, uuid)

    def _periodic(self, interval, func):
        self._periodics.append(
            service.Periodic(
                interval, func, name='%s-%s' % (self.host, func.__name__)
            ).start()
        )

    def _halt_periodics(self):
        self._stop.set()
        for periodic in self._periodics:
            periodic.stop()

    def heartbeat(self):
        try:
            self.conductor.service_heartbeat(
                nimbus_context.get_admin_context(),
                self.host,
                BINARY,
                timeout=self.conf.report_interval,
            )
        except messaging.MessagingTimeout:
            LOG.warning(
                'nimbus-compute %s: no reply to its heartbeat within '
                '%s s; the next one follows',
                self.host,
                self.conf.report_interval,
            )

    def expect_quiet(self):
        """The cell names this host in no instance or migration record
        (one check the host group made for a slice of its hosts, just
        before their periodic update): the next update, if it then finds
        no guest either, reads no instances (there are none to count and
        no orphan to destroy) and so makes no call to the cell."""
        self._quiet_update = True

    def expect_instances(self, instances, node_batch=None):
        """The cell places ``instances`` (live Instance records) on this
        host: one read the host group made for a slice of its hosts just
        before their periodic update. The next update takes them instead
        of its own ``instances_on_host`` call when every guest it then
        lists is one of them; else (a build that landed since the read)
        it reads the cell as always. ``node_batch`` (a list): the
        update's node record, if it is to be sent, is appended to it as
        ``(tracker, record)`` for the group to send with the slice's
        others (:meth:`~nimbus.compute.resource_tracker.ResourceTracker.
        report_node`)."""
        self._known_instances = list(instances)
        self._node_batch = node_batch

    def _instances(self, ctxt, guests, known, quiet):
        """The live instances of this host for a periodic update that
        listed ``guests``: ``known`` (those the host group read for the
        slice) when they cover every guest, none when the cell names the
        host nowhere (``quiet``) and it has no guest, else read from the
        cell."""
        if known is not None and guests <= {
            i.uuid for i in known if i.vm_state != states.DELETED
        }:
            return known
        # A guest (a build that landed since the check) means the check
        # may be behind: then the cell is read as always.
        if quiet and not guests:
            return []
        return self.conductor.instances_on_host(ctxt, self.host)

    def _update_resources(self):
        ctxt = nimbus_context.get_admin_context()
        # One use only, whatever happens below.
        batch, self._node_batch = self._node_batch, None
        known, self._known_instances = self._known_instances, None
        quiet, self._quiet_update = self._quiet_update, False
        guests = set(self.driver.list_instances())
        instances = self._instances(ctxt, guests, known, quiet)
        # Guests listed before the instances: a build that starts in
        # between has its record (host set before the cast) in the list.
        self.runner.destroy_orphans(instances, guests)
        try:
            self.tracker.update(ctxt)
        except (exception.ReshapeNeeded, exception.ReshapeFailed) as exc:
            # Seed 002: a reshape only ever runs at startup; meeting one in
            # a periodic run means placement and the driver disagree on the
            # tree, and the service must not run on as if they did.
            self._stop_fatally(
                'nimbus-compute %s stops: its driver asked for a reshape of '
                'the provider tree during a periodic update (%s: %s); '
                'restart it to reshape at startup, or run nimbus-manage '
                'placement migrate-compute-inventory --host %s'
                % (self.host, type(exc).__name__, exc, self.host)
            )
            return
        self.tracker.report_node(
            ctxt,
            [i for i in instances if i.vm_state != states.DELETED],
            force=False,
            batch=batch,
        )

    def _stop_fatally(self, reason):
        LOG.critical(reason)
        self.fatal = reason
        self._halt_periodics()
        # From another thread: stop() waits for the periodic threads' RPC
        # server, and this runs on one of them.
        threading.Thread(
            target=self._stop_and_report,
            args=(reason,),
            name='%s-fatal' % self.host,
            daemon=True,
        ).start()

    def _stop_and_report(self, reason):
        try:
            self.stop()
        finally:
            if self.on_fatal is not None:
                self.on_fatal(reason)

    def kill(self):
        """Simulate ``kill -9`` (for tests and the all-in-one runner): no
        more heartbeats or messages, builds under way abandoned where they
        are (the fake driver's spawns stop), nothing cleaned up."""
        self._halt_periodics()
        halt = getattr(self.driver, 'halt', None)
        if halt is not None:
            halt()
        if self._server is not None:
            self._server.stop()
            self._server.wait()
        self.manager.shutdown(wait=False)

    def stop(self):
        """A graceful stop (SIGTERM): no more messages are taken, builds
        already spawning finish, builds still waiting for a worker are
        handed back to the cell conductor (the next alternate gets them),
        and only then does the service return."""
        self._halt_periodics()
        LOG.info(
            'nimbus-compute %s stopping: no new builds; finishing the '
            'spawns under way, handing back the builds not started',
            self.host,
        )
        if self._server is not None:
            self._server.stop()
            self._server.wait()
            self._server = None
        self.runner.draining = True
        self.manager.shutdown()
        LOG.info('nimbus-compute %s stopped', self.host)
