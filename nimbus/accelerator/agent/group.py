"""The accelerator agents of many hosts in one process.

:class:`AgentGroup` composes the :class:`.service.AcceleratorAgent` of each
host on the shared machinery of
:class:`nimbus.messaging_internals.simulated.HostGroup` (one transport, one
RPC server, one worker pool, one ticker), which serves a single real host
as well as the simulated hosts of ``--simulated-hosts N``. Before the hosts
start it makes their first reports in bulk: their devices to the
accelerator service in one call per :data:`REPORT_BATCH` hosts, their
provider trees read from placement in two listings, and the device
providers of the hosts that have none yet written together.
:func:`build_agents` is the composition function.
"""

from oslo_log import log as logging

from nimbus.accelerator.agent import placement_report
from nimbus.accelerator.agent import rpcapi
from nimbus.accelerator.agent import service
from nimbus.common import context as nimbus_context
from nimbus.common import exception as common_exc
from nimbus.common import host_batches
from nimbus.messaging_internals import simulated

LOG = logging.getLogger(__name__)

# Hosts whose first device reports go to the service in one call.
REPORT_BATCH = 250


class AgentGroup:
    """The agents of ``hosts`` in this process (see :func:`build_agents`).

    :meth:`start` starts them (``[simulated_hosts] start_concurrency`` at
    a time) and returns the names that failed; :attr:`agents` maps the
    running ones by host; :meth:`stop` stops everything.
    """

    def __init__(
        self,
        conf,
        transport,
        placement,
        reporter,
        hosts,
        drivers_for=None,
        trees=None,
    ):
        self.conf = conf
        self.trees = trees
        self.names = list(hosts)
        self.placement = placement
        self.reporter = reporter
        self.drivers_for = drivers_for
        self.group = simulated.from_conf(
            conf, transport, rpcapi.TOPIC, rpcapi.VERSION
        )

    def build(self, host):
        drivers = self.drivers_for(host) if self.drivers_for else None
        return service.AcceleratorAgent(
            self.conf, host, self.placement, self.reporter, drivers=drivers
        )

    @property
    def agents(self):
        """``{host: AcceleratorAgent}`` of the running hosts."""
        return self.group.hosts

    def start(self, on_started=None):
        agents = [(name, self.build(name)) for name in self.names]
        self._send_devices(agents)
        self._read_trees(agents)
        failed = self.group.start_hosts(agents, on_started)
        LOG.info(
            'Accelerator agent: %d hosts started (%d failed)',
            len(self.names) - len(failed),
            len(failed),
        )
        return failed

    def _send_devices(self, agents):
        """The devices of ``agents`` to the service in a few calls
        (``report_many``, :data:`REPORT_BATCH` hosts each) when the
        reporter takes them, before the hosts start and before their
        placement reports: each host's first report then sends nothing
        (:meth:`.service.AcceleratorAgent.sent`). A batch that fails is
        logged; its hosts send their own. A host whose discovery fails is left
        to its own report."""
        takes = getattr(self.reporter, 'takes_batches', None)
        if len(agents) < 2 or takes is None or not takes():
            return
        found = []
        for _name, agent in agents:
            try:
                found.append((agent, agent.discover()))
            except Exception:  # noqa: BLE001 - its own report logs it
                continue
        ctxt = nimbus_context.get_admin_context()
        for batch, _none in host_batches.sent(
            found,
            REPORT_BATCH,
            lambda batch: self.reporter.report_many(
                ctxt, {agent.host: devices for agent, devices in batch}
            ),
            LOG,
            'Reporting in one call the devices',
            'sends its own',
        ):
            for agent, devices in batch:
                agent.sent(devices)

    def _read_trees(self, agents):
        """Read what the hosts' first reports need from placement in two
        listings for all of them (:func:`.placement_report.read_trees`)
        instead of two per host. A failure is logged: each host then
        asks for itself."""
        if len(agents) < 2:
            return
        try:
            trees = placement_report.read_trees(
                nimbus_context.get_admin_context(),
                self.placement,
                [name for name, _agent in agents],
            )
        except common_exc.PlacementError as exc:
            host_batches.failed(
                LOG,
                'Reading the provider trees',
                len(agents),
                exc,
                'reads its own',
            )
            return
        for name, agent in agents:
            if name in trees:
                agent.placement.hint(*trees[name])
        if self.trees is not None:
            self._write_new(
                [
                    (agent, trees[name][0])
                    for name, agent in agents
                    if name in trees and not trees[name][1]
                ]
            )

    def _write_new(self, fresh):
        """The device providers of ``fresh`` (``[(agent, root uuid)]``:
        hosts whose tree holds none yet) written together by
        ``self.trees`` (:func:`.placement_report.write_new`); an agent
        whose discovery fails is left to its own first report."""
        entries = []
        for agent, root in fresh:
            try:
                agent.discover()
            except Exception:  # noqa: BLE001 - its own report logs it
                continue
            entries.append((agent.placement, root, agent.providers()))
        if entries:
            placement_report.write_new(
                nimbus_context.get_admin_context(),
                self.placement,
                self.trees,
                entries,
            )

    def stop(self):
        self.group.stop()


def build_agents(
    conf,
    transport,
    placement_client,
    reporter,
    hosts,
    drivers_for=None,
    trees=None,
):
    """The composition function of the accelerator agent.

    ``conf``: a ConfigOpts with ``[accelerator_agent]``, the drivers'
    groups and ``[simulated_hosts]`` registered; ``transport``: the
    oslo.messaging transport of the accelerator service's bus (``rabbit://``
    or ``inproc://``), on which every host is served as
    ``accelerator-agent.<host>``; ``placement_client``: a
    :class:`nimbus.common.clients.placement.PlacementClient` (sized for
    the hosts: :func:`nimbus.common.clients.placement.placement_session`);
    ``reporter``: an object with
    ``report_devices(ctxt, host, devices)``, in production
    ``nimbus.accelerator.rpcapi.AcceleratorAPI(transport)``
    (:class:`.service.NullDeviceReporter` for placement only);
    ``hosts``: the host names (``[conf.host]`` for one real host, or
    :func:`nimbus.messaging_internals.simulated.host_names` for simulated ones, named as
    the simulated computes are so the agent finds their providers);
    ``drivers_for(host)``: optional, returns ``[(name, driver)]`` instead
    of loading ``enabled_drivers``; ``trees(providers) -> {uuid:
    generation}``: optional, creates many providers with their
    inventories and traits at once (:func:`nimbus.placement.direct.
    tree_writer`): the device providers of the hosts that have none yet
    are then written together before the hosts start.

    Returns an :class:`AgentGroup`, not started: call ``start()``, then
    ``stop()`` at the end.
    """
    return AgentGroup(
        conf,
        transport,
        placement_client,
        reporter,
        hosts,
        drivers_for=drivers_for,
        trees=trees,
    )
