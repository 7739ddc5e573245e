"""Many simulated compute hosts in one nimbus-compute process.

``nimbus-compute --simulated-hosts N`` (and ``nimbus all-in-one --hosts
N``) run N :class:`~nimbus.compute.service.ComputeService` objects named
``<[DEFAULT] host>-0001`` ... on the shared machinery of
:class:`nimbus.messaging_internals.simulated.HostGroup`: one cell bus connection, one
RPC server consuming every ``compute.<host>`` queue, one worker pool, one
ticker for the heartbeats and resource updates (staggered), one placement
HTTP connection pool and one cell conductor client. Each host keeps its
own service record, compute node record, provider tree and fake guests.

Heartbeats go in one batch: every ``report_interval`` one
``service_heartbeats`` call carries the names of the hosts running at that
moment (one transaction in the cell conductor), where one call per host
would make a thousand hosts a hundred calls a second of background load.
A host that stopped, was killed or stopped itself is left out of the next
batch and goes down after ``service_down_time``. A cell conductor too old
for the batch (RPC 1.3) gets the heartbeats one by one.

The hosts start together: one batch carries their first heartbeat, one
listing of placement's providers tells which roots to create without a GET
first, and one ``hosts_with_records`` call (RPC 1.13) tells which hosts no
instance or migration of the cell names; those answer their four recovery
reads with nothing, without a call (:class:`NothingToRecover`). Given a
bulk writer of placement (``trees``: in the all-in-one, its placement's
database in this process), the new hosts' provider trees, each with its
inventories and traits, are written a few hundred hosts per transaction
before the hosts start, and each host's startup update takes its tree as
written instead of three placement requests.

The periodic resource updates run a slice of hosts at a time (the host
group's wheel): one ``instances_on_hosts`` call (RPC 1.15) before the
slice reads the instances of all its hosts, and one
``compute_nodes_update`` after it sends the node records that changed,
where each busy host (every host, in a multi-create) made an
``instances_on_host`` and a ``compute_node_update`` call of its own.
"""

import threading

from oslo_log import log as logging
import oslo_messaging as messaging

from nimbus.common import context as nimbus_context
from nimbus.common import host_batches
from nimbus.common.objects import ComputeNodeRecord
from nimbus.messaging_internals import simulated
from nimbus.common.clients import placement as placement_client
from nimbus.compute import rpcapi
from nimbus.compute import service as compute_service

LOG = logging.getLogger(__name__)

# Hosts whose new provider trees go in one write (one transaction).
TREE_BATCH = 250


class NothingToRecover:
    """The cell conductor API of a host that the cell's records do not
    name (no instance, no migration: :meth:`~nimbus.conductor.rpcapi.
    CellConductorAPI.hosts_with_records`, asked once for the hosts that
    start together). Until :meth:`end_startup` (the host's start calls it
    once its recovery is over) the recovery's reads answer what the cell
    would have answered, nothing, without a call each; everything else,
    and every read after, goes to ``conductor``."""

    READS = frozenset(
        (
            'instances_on_host',
            'moves_of_host',
            'evacuations_done',
            'live_migrations_from',
        )
    )

    def __init__(self, conductor):
        self._conductor = conductor
        self._starting = True

    def end_startup(self):
        self._starting = False

    def _nothing(self, ctxt, host):
        return []

    def __getattr__(self, name):
        if self._starting and name in self.READS:
            return self._nothing
        return getattr(self._conductor, name)


class SimulatedComputes:
    """N compute hosts of one cell in this process.

    ``conf`` is the compute's config (its ``[DEFAULT] host`` is the base of
    the host names); ``transport`` the cell bus and ``conductor`` the cell
    conductor's RPC API on it (built by :func:`nimbus.services.
    simulated_computes`, the composition root).
    ``conf_for(host)``, when given, returns the config of one host (the
    all-in-one runner gives some hosts options of their own); by default
    every host shares ``conf``. ``accelerator`` is the accelerator API
    client every host shares (None without an accelerator service): the
    builds read their ARQs and the deletes remove them through it.
    ``session``: the requests session of their placement client (by
    default one keeping ``[simulated_hosts] workers`` connections).
    ``trees``: ``trees(providers) -> {uuid: generation}``, which creates
    many providers with their inventories and traits at once
    (:func:`nimbus.placement.direct.tree_writer`); None: each host writes
    its own tree.
    """

    def __init__(
        self,
        conf,
        transport,
        conductor,
        count=0,
        base=None,
        conf_for=None,
        accelerator=None,
        session=None,
        trees=None,
    ):
        self.conf = conf
        self.trees = trees
        self.transport = transport
        self.group = simulated.from_conf(
            conf, self.transport, rpcapi.TOPIC, rpcapi.VERSION
        )
        self.placement = placement_client.PlacementClient.from_conf(
            conf,
            session=session
            or placement_client.placement_session(
                conf.simulated_hosts.workers
            ),
        )
        self.conductor = conductor
        self.accelerator = accelerator
        self.conf_for = conf_for or (lambda host: conf)
        self.names = simulated.host_names(base or conf.host, count)
        self._heartbeat_task = None
        # The node records a slice's updates left (:meth:`before_updates`),
        # per thread: a slice prepares, runs and finishes on one.
        self._slice = threading.local()
        self.group.prepare(
            '_update_resources', self.before_updates, self.after_updates
        )

    def build(self, host, registered=False, quiet=False):
        """The service of ``host``; ``registered``: its first heartbeat
        went in a batch; ``quiet``: the cell names it nowhere
        (:class:`NothingToRecover`)."""
        return compute_service.ComputeService(
            self.conf_for(host),
            host,
            self.transport,
            self.placement,
            NothingToRecover(self.conductor) if quiet else self.conductor,
            accelerator=self.accelerator,
            pool=self.group.pool,
            batched_heartbeat=True,
            registered=registered,
        )

    def _prepared(self, names):
        """The services of ``names``, built for a start together: their
        first heartbeat goes in one batch (one call creates every service
        record) and one listing of placement's providers tells each whose
        root provider does not exist yet (it is created without a GET
        first). Each host's own start then costs what is its own: its
        recovery reads, its provider tree writes and its node record. A
        failure of either batch is logged and the hosts do it one by one,
        as a host started alone does."""
        ctxt = nimbus_context.get_admin_context()
        registered = False
        if len(names) > 1 and self.conductor.takes_heartbeat_batches():
            try:
                self.conductor.service_heartbeats(
                    ctxt, compute_service.BINARY, names
                )
                registered = True
            except Exception as exc:  # noqa: BLE001 - each host then sends its own
                host_batches.failed(
                    LOG,
                    'The first heartbeat in one batch',
                    len(names),
                    exc,
                    'sends its own',
                )
        quiet = self._quiet(ctxt, names)
        services = [
            (name, self.build(name, registered, name in quiet))
            for name in names
        ]
        if len(names) > 1:
            try:
                known = self.placement.provider_uuids(ctxt)
            except Exception as exc:  # noqa: BLE001 - each host then reads its own
                LOG.warning(
                    'Listing the resource providers failed (%s: %s); each '
                    'host reads its own',
                    type(exc).__name__,
                    exc,
                )
            else:
                for _name, svc in services:
                    svc.tracker.root_absent = (
                        svc.tracker.node_uuid not in known
                    )
                if self.trees is not None:
                    self._write_trees(ctxt, services)
                    self._send_nodes(ctxt, services, quiet)
        return services

    def _send_nodes(self, ctxt, services, quiet):
        """The node records of the hosts of ``quiet`` (nothing to
        recover: no instance) whose trees a batch wrote (so their
        records, allocation ratios included, are known before they
        start), :data:`TREE_BATCH` per ``compute_nodes_update`` call;
        each host's start then sends its record only if it differs. A
        failed batch is logged and its hosts send their own."""
        if not self.conductor.takes_node_batches():
            return
        records = []
        for name, svc in services:
            record = svc.tracker.planned_record() if name in quiet else None
            if record is not None:
                records.append((svc.tracker, record))
        if records:
            # A host with a node record can be chosen: its queue exists
            # first, so a build sent before it serves waits for it.
            self.group.declare([t.host for t, _record in records])
        for batch, _none in self._node_batches(ctxt, records):
            for tracker, record in batch:
                tracker.sent(record)

    def _node_batches(self, ctxt, records):
        """``host_batches.sent`` of ``records`` (``(tracker, record)``
        pairs) in ``compute_nodes_update`` calls of :data:`TREE_BATCH`."""
        return host_batches.sent(
            records,
            TREE_BATCH,
            lambda batch: self.conductor.compute_nodes_update(
                ctxt,
                [ComputeNodeRecord.from_primitive(rec) for _t, rec in batch],
            ),
            LOG,
            'Sending the node records',
            'sends its own',
        )

    def _write_trees(self, ctxt, services):
        """The trees of the hosts whose root provider does not exist,
        written :data:`TREE_BATCH` hosts at a time by ``self.trees``; a
        host of a batch that failed (logged) writes its own at its start,
        as does a host whose driver asks for a reshape."""
        planned = []
        for _name, svc in services:
            if svc.tracker.root_absent:
                tree = svc.tracker.planned_tree()
                if tree is not None:
                    planned.append((svc.tracker, tree))
        if not planned:
            return
        providers = [p for _t, tree in planned for p in tree.providers()]
        try:
            self.placement.ensure_resource_classes(
                ctxt, {rc for p in providers for rc in p.inventory}
            )
            self.placement.ensure_traits(
                ctxt, {t for p in providers for t in p.traits}
            )
        except Exception as exc:  # noqa: BLE001 - each host then writes its own
            host_batches.failed(
                LOG,
                'Creating the resource classes and traits',
                len(planned),
                exc,
                'writes its own tree',
            )
            return
        for batch, generations in host_batches.sent(
            planned,
            TREE_BATCH,
            lambda batch: self.trees(
                placement_client.new_provider(p, p.parent_uuid)
                for _t, tree in batch
                for p in tree.providers()
            ),
            LOG,
            'Writing the provider trees',
            'writes its own',
        ):
            for tracker, tree in batch:
                for provider in tree.providers():
                    provider.generation = generations[provider.uuid]
                tracker.written(tree)

    def before_updates(self, names):
        """Before the periodic update of a slice of hosts: one
        ``instances_on_hosts`` call (cell conductor RPC 1.15) reads the
        instances of them all, and each host's update takes its own from
        there (:meth:`~nimbus.compute.service.ComputeService.
        expect_instances`) and leaves its node record, if it changed, for
        :meth:`after_updates` to send with the slice's others. To a cell
        conductor capped below 1.15, or when that read fails, one
        ``hosts_with_records`` call tells which hosts the cell names
        nowhere; each of those skips its own ``instances_on_host`` read
        (:meth:`~nimbus.compute.service.ComputeService.expect_quiet`).
        Returns the hosts that need no read of their own (all of them
        after the batched read). In a multi-create, where every host is
        busy, that is one call per slice instead of two per host."""
        ctxt = nimbus_context.get_admin_context()
        self._slice.nodes = None
        found = self._instances(ctxt, names)
        if found is not None:
            nodes = [] if self.conductor.takes_node_batches() else None
            self._slice.nodes = nodes
            for name in names:
                host = self.group.hosts.get(name)
                if host is not None:
                    host.expect_instances(found.get(name, ()), nodes)
            return set(found)
        quiet = self._quiet(ctxt, names, minimum=1)
        for name in quiet:
            host = self.group.hosts.get(name)
            if host is not None:
                host.expect_quiet()
        return quiet

    def _instances(self, ctxt, names):
        """``{host: [Instance]}`` of ``names`` in one call, or None when
        the cap does not let it go or it failed (logged)."""
        if not self.conductor.takes_host_instance_batches():
            return None
        try:
            return self.conductor.instances_on_hosts(ctxt, names)
        except Exception as exc:  # noqa: BLE001 - each host then reads its own
            host_batches.failed(
                LOG,
                'Reading the instances in one call',
                len(names),
                exc,
                'reads its own',
            )
            return None

    def after_updates(self, names):
        """After the periodic update of a slice of hosts: the node records
        their updates left (:meth:`before_updates`) go in
        ``compute_nodes_update`` calls of :data:`TREE_BATCH` records; the
        hosts of a batch that failed (logged) send their own, one call
        each. Returns the number of records sent."""
        nodes, self._slice.nodes = getattr(self._slice, 'nodes', None), None
        if not nodes:
            return 0
        ctxt = nimbus_context.get_admin_context()
        delivered = set()
        for batch, _answer in self._node_batches(ctxt, nodes):
            for tracker, record in batch:
                tracker.delivered(record)
                delivered.add(tracker.host)
        for tracker, record in nodes:
            if tracker.host not in delivered:
                try:
                    tracker.send(ctxt, record)
                except Exception:  # noqa: BLE001 - the next update sends it
                    LOG.exception(
                        'Sending the node record of %s failed', tracker.host
                    )
        return len(delivered)

    def _quiet(self, ctxt, names, minimum=2):
        """The hosts of ``names`` no instance or migration of the cell
        names (one call); none when the call cannot be made."""
        if (
            len(names) < minimum
            or not self.conductor.takes_host_record_checks()
        ):
            return set()
        try:
            named = self.conductor.hosts_with_records(ctxt, names)
        except Exception as exc:  # noqa: BLE001 - each host then reads its own
            host_batches.failed(
                LOG,
                'Asking the cell which have records',
                len(names),
                exc,
                'reads its own',
            )
            return set()
        return set(names) - set(named)

    def heartbeat(self):
        """One heartbeat for every running host: one call (per
        ``heartbeats.MAX_HOSTS`` hosts), or one call per host to a cell
        conductor capped below the batch (``[upgrade_levels] conductor``
        < 1.3). Returns the hosts sent."""
        hosts = sorted(
            name for name, host in list(self.group.hosts.items()) if host.alive
        )
        if not hosts:
            return hosts
        if self.conductor.takes_heartbeat_batches():
            try:
                self.conductor.service_heartbeats(
                    nimbus_context.get_admin_context(),
                    compute_service.BINARY,
                    hosts,
                    timeout=self.conf.report_interval,
                )
                return hosts
            except messaging.MessagingTimeout:
                LOG.warning(
                    'No reply to the heartbeats of %d hosts within %s s; '
                    'the next batch follows',
                    len(hosts),
                    self.conf.report_interval,
                )
                return hosts
        for name in hosts:
            host = self.group.hosts.get(name)
            if host is not None and host.alive:
                host.heartbeat()
        return hosts

    @property
    def hosts(self):
        """``{name: ComputeService}`` of the running hosts."""
        return self.group.hosts

    def start(self, on_started=None):
        """Start every host (``start_concurrency`` at a time); returns the
        names of those that failed to start."""
        if self._heartbeat_task is None:
            # From the start: hosts served early must not go down while
            # the others are still starting.
            self._heartbeat_task = self.group.ticker.add(
                self.conf.report_interval,
                self.heartbeat,
                first=self.conf.report_interval,
                name='heartbeats',
            )
        failed = self.group.start_hosts(self._prepared(self.names), on_started)
        LOG.info(
            '%d simulated compute hosts started (%d failed)',
            len(self.names) - len(failed),
            len(failed),
        )
        return failed

    def start_host(self, host):
        """Start (or restart) one host by name."""
        return self.group.start_host(host, self.build(host))

    def stop_host(self, host):
        self.group.stop_host(host)

    def kill_host(self, host):
        self.group.kill_host(host)

    def stop(self):
        self.group.stop()
