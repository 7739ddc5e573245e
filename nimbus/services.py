"""Assembling each Nimbus service from a config.

The daemons in :mod:`nimbus.cmd` and the all-in-one runner call these same
builders; only the URLs in the config differ (``inproc://`` and SQLite in
one process, ``rabbit://`` and MariaDB/PostgreSQL across machines).
Dependencies are created here and injected into plain service classes.
"""

from oslo_log import log as logging
from oslo_config import cfg

from nimbus.db import cells as cells_mod
from nimbus.common import db as common_db
from nimbus.common.db import options as db_options
from nimbus.common import rpc
from nimbus.common import service
from nimbus.common.rpc import backlog
from nimbus.common.clients import accelerator as accelerator_client
from nimbus.common.clients import placement as placement_client

LOG = logging.getLogger(__name__)

# Seconds between checks of the scheduler's decision backlog on RabbitMQ
# (nimbus.common.rpc.backlog: a warning when the max-length policy is missing).
BACKLOG_CHECK_INTERVAL = 60.0


def placement(conf, session=None):
    return placement_client.PlacementClient.from_conf(conf, session=session)


def accelerator(conf, session=None):
    """The accelerator API client, or None without ``[accelerator_client]
    endpoint``. Built once per service and injected."""
    return accelerator_client.from_conf(conf, session=session)


def accelerator_binder(conf, client=None):
    """The conductors' accelerator step around one client (None without an
    accelerator endpoint)."""
    from nimbus.conductor import accelerators

    client = client or accelerator(conf)
    return accelerators.AcceleratorBinder(client) if client else None


def api_db(conf):
    if not conf.api_database.connection:
        raise SystemExit('[api_database] connection is not set')
    return common_db.get_database(
        conf.api_database.connection,
        pool=db_options.pool_options(conf.api_database),
    )


def cell_directory(conf):
    return cells_mod.CellDirectory(conf, api_db(conf))


def scheduler_api(conf, transport=None):
    from nimbus.scheduler import rpcapi as scheduler_rpcapi

    return scheduler_rpcapi.SchedulerAPI(
        transport or rpc.get_transport(conf), conf
    )


def control_heartbeat(conf, binary, host=None):
    """The periodic heartbeat of a service that belongs to no cell (the
    scheduler, the super conductor): its record in cell0's database, where
    Nova's nova-scheduler and super conductor keep theirs, so
    ``GET /os-services`` lists it up or down as it lists the others. The
    host is ``[DEFAULT] host``."""
    from nimbus.db import cell_services

    host = host or conf.host
    cells = cell_directory(conf)
    state = {'failing': False}

    def beat():
        try:
            with cells.db(cells.cell0()).session() as session:
                cell_services.heartbeat(session, host, binary)
        except Exception as exc:  # noqa: BLE001 - the heartbeat is tried again next beat
            # Once per outage, not once per beat.
            if not state['failing']:
                LOG.warning(
                    '%s on %s: its heartbeat could not be recorded in '
                    "cell0's database (is cell0 mapped?): %s",
                    binary,
                    host,
                    exc,
                )
            state['failing'] = True
            return
        if state['failing']:
            LOG.info('%s on %s: heartbeat recorded again', binary, host)
        state['failing'] = False

    return service.Periodic(
        conf.report_interval, beat, name='%s-heartbeat' % binary, first=0
    )


def scheduler_service(conf, host=None):
    """The scheduler on the API bus, with its host-state cache."""
    from nimbus.scheduler import manager as scheduler_manager
    from nimbus.scheduler import conf as sched_conf
    from nimbus.scheduler import notifications

    try:
        sched_conf.register_opts(conf)
    except cfg.DuplicateOptError:  # registered differently by the integrator
        pass
    transport = rpc.get_transport(conf)
    notifier = None
    periodics = []
    if conf.scheduler.emit_decisions:
        notifier = notifications.make_notifier(
            rpc.get_notification_transport(conf), host or conf.host
        )
        if conf.scheduler.decision_backlog:
            watch = backlog.BacklogWatch(
                rpc.transport_url_of(conf),
                notifications.QUEUES,
                conf.scheduler.decision_backlog,
            )
            if watch.enabled:  # RabbitMQ; the in-process bus bounds itself
                periodics.append(
                    service.Periodic(
                        BACKLOG_CHECK_INTERVAL,
                        watch.check,
                        name='decision-backlog',
                    )
                )
    manager = scheduler_manager.build_manager(
        conf,
        placement=placement(conf),
        cells=cell_directory(conf),
        api_db=api_db(conf),
        notifier=notifier,
    )
    periodics.append(
        control_heartbeat(conf, service.SCHEDULER_BINARY, host or conf.host)
    )
    return service.RPCService(
        transport,
        'scheduler',
        host or conf.host,
        [manager],
        on_stop=[getattr(manager, 'shutdown', lambda: None)],
        periodics=periodics,
        threads=conf.scheduler.executor_thread_pool_size,
    )


def super_conductor_service(conf, host=None, accelerator_api=None):
    from nimbus.conductor import manager as conductor_manager
    from nimbus.conductor import super_conductor

    conductor = super_conductor.SuperConductor(
        conf,
        api_db(conf),
        cell_directory(conf),
        scheduler_api(conf),
        placement(conf),
        accelerator=accelerator_binder(conf, accelerator_api),
    )
    manager = conductor_manager.SuperConductorManager(
        conductor, conf.conductor.workers
    )
    periodics = [
        control_heartbeat(conf, service.CONDUCTOR_BINARY, host or conf.host)
    ]
    # One auditor (its clients and cell directory) for the recovery pass
    # and the periodic audit: each of its own opened another placement
    # session and another set of cell database connections.
    checker = None
    if conf.conductor.recovery_interval or conf.conductor.audit_interval:
        checker = auditor(conf, accelerator_api)
    if conf.conductor.recovery_interval:
        periodics.append(
            service.Periodic(
                conf.conductor.recovery_interval,
                recovery_task(conf, conductor, accelerator_api, checker),
                name='recovery',
                first=min(10, conf.conductor.recovery_interval),
            )
        )
    if conf.conductor.audit_interval:
        periodics.append(
            service.Periodic(
                conf.conductor.audit_interval,
                audit_task(conf, accelerator_api, checker),
                name='audit',
            )
        )
    return service.RPCService(
        rpc.get_transport(conf),
        'conductor',
        host or conf.host,
        [manager],
        on_stop=[manager.shutdown],
        periodics=periodics,
    )


def auditor(conf, accelerator_api=None):
    """The consistency audit of the whole deployment (see
    :mod:`nimbus.conductor.audit`)."""
    from nimbus.conductor import audit

    return audit.from_conf(
        conf,
        api_db(conf),
        cell_directory(conf),
        placement(conf),
        accelerator_api or accelerator(conf),
    )


def audit_task(conf, accelerator_api=None, checker=None):
    """The super conductor's periodic audit: read-only, one log line.
    ``checker``: the auditor to run (default: one of its own)."""
    from nimbus.common import context
    from nimbus.conductor import audit

    checker = checker or auditor(conf, accelerator_api)

    def run():
        try:
            report = checker.run(context.get_admin_context())
        except audit.AuditError as exc:
            LOG.warning('audit: could not run: %s', exc)
            return None
        if report.disagreements:
            LOG.warning('%s', report.summary())
        else:
            LOG.info('%s', report.summary())
        return report

    return run


def recovery_task(conf, conductor, accelerator_api=None, checker=None):
    """The super conductor's recovery pass (see
    :mod:`nimbus.conductor.recovery`); ``checker`` as for
    :func:`audit_task`."""
    from nimbus.common import context
    from nimbus.conductor import recovery

    pass_ = recovery.Recovery(
        checker or auditor(conf, accelerator_api), conductor
    )

    def run():
        return pass_.run(context.get_admin_context())

    return run


def cell_conductor_service(
    conf,
    transport_url=None,
    database_url=None,
    host=None,
    accelerator_api=None,
    server=None,
):
    """A cell's conductor on the cell's bus, writing the cell database.

    ``host`` (default ``[DEFAULT] host``) is the host its service record
    names; ``server`` (default ``host``) its RPC server name."""
    from nimbus.common import context
    from nimbus.compute import rpcapi as compute_rpcapi
    from nimbus.conductor import build_check
    from nimbus.conductor import cell_conductor
    from nimbus.conductor import manager as conductor_manager

    url = database_url or conf.database.connection
    if not url:
        raise SystemExit(
            '[database] connection (the cell database) is not set'
        )
    transport = rpc.get_transport(conf, transport_url)
    cell_db = common_db.get_database(
        url, pool=db_options.pool_options(conf.database)
    )
    placement_client = placement(conf)
    conductor = cell_conductor.CellConductor(
        conf,
        cell_db,
        placement_client,
        compute_rpcapi.ComputeAPI(transport, conf),
        accelerator=accelerator_binder(conf, accelerator_api),
    )
    periodics = []
    if conf.conductor.build_check_interval:
        check = build_check.BuildCheck(
            conf,
            cell_db,
            placement_client,
            reschedule=conductor.build_instances,
        )
        periodics.append(
            service.Periodic(
                conf.conductor.build_check_interval,
                lambda: check.run(context.get_admin_context()),
                name='build-check',
            )
        )
    # The cell conductor's own heartbeat: the scheduler tells "the computes
    # are down" from "nobody records their heartbeats" by it.
    periodics.append(
        service.Periodic(
            conf.report_interval,
            lambda: conductor.service_heartbeat(
                context.get_admin_context(),
                host or conf.host,
                service.CONDUCTOR_BINARY,
            ),
            name='conductor-heartbeat',
            first=0,
        )
    )
    return service.RPCService(
        transport,
        'conductor',
        server or host or conf.host,
        [conductor_manager.CellConductorManager(conductor)],
        periodics=periodics,
    )


def compute_service(conf, host=None, transport_url=None, accelerator_api=None):
    from nimbus.compute import service as compute_service_mod
    from nimbus.conductor import rpcapi as conductor_rpcapi

    transport = rpc.get_transport(conf, transport_url)
    return compute_service_mod.ComputeService(
        conf,
        host or conf.host,
        transport,
        placement(conf),
        conductor_rpcapi.CellConductorAPI(transport, conf),
        accelerator=accelerator_api or accelerator(conf),
    )


def _in_process(session, conf, placement_app):
    """``session``, its placement requests going straight into
    ``placement_app`` (the placement API of this process) when given."""
    if placement_app is not None:
        from nimbus.placement import direct

        direct.mount(session, conf.placement_client.endpoint, placement_app)
    return session


def _tree_writer(placement_app):
    """The bulk provider writer of ``placement_app`` (the placement API
    app of this process), or None (:func:`nimbus.placement.direct.
    tree_writer`)."""
    if placement_app is None:
        return None
    from nimbus.placement import direct

    return direct.tree_writer(placement_app)


def simulated_computes(
    conf,
    count=0,
    transport_url=None,
    base=None,
    conf_for=None,
    placement_app=None,
):
    """N simulated compute hosts of one cell on one transport (see
    :class:`nimbus.compute.simulated.SimulatedComputes`);
    ``placement_app``: the placement API app of this process, which
    their placement requests then call without HTTP, and whose database
    takes the new hosts' provider trees in a few transactions at start."""
    from nimbus.compute import simulated
    from nimbus.conductor import rpcapi as conductor_rpcapi

    transport = rpc.get_transport(conf, transport_url)
    return simulated.SimulatedComputes(
        conf,
        transport,
        conductor_rpcapi.CellConductorAPI(transport, conf),
        count=count,
        base=base,
        conf_for=conf_for,
        session=_in_process(
            placement_client.placement_session(conf.simulated_hosts.workers),
            conf,
            placement_app,
        ),
        # One client for every host, its connection pool sized as theirs.
        accelerator=accelerator(
            conf,
            session=placement_client.placement_session(
                conf.simulated_hosts.workers
            ),
        ),
        trees=_tree_writer(placement_app),
    )


def api_app(conf):
    from nimbus.api import app as api_app_mod
    from nimbus.conductor import rpcapi as conductor_rpcapi

    transport = rpc.get_transport(conf)
    return api_app_mod.make_app(
        conf,
        api_db=api_db(conf),
        cells=cell_directory(conf),
        conductor_api=conductor_rpcapi.SuperConductorAPI(transport, conf),
        scheduler_api=scheduler_api(conf, transport),
        placement=placement(conf),
        accelerator=accelerator(conf),
        decisions_transport=rpc.get_notification_transport(conf),
    )


def placement_app(conf):
    from nimbus.placement import wsgi as placement_wsgi

    return placement_wsgi.make_app(conf)


def accelerator_service(conf, transport=None):
    """The accelerator service (API app, agents' reports, binder) on the
    API bus, programming devices through the agents' RPC API."""
    from nimbus.accelerator.agent import rpcapi as agent_rpcapi
    from nimbus.accelerator import service as accel_service

    transport = transport or rpc.get_transport(conf)
    return accel_service.build_accelerator_service(
        conf, transport, agent_api=agent_rpcapi.AgentAPI(transport, conf)
    )


def accelerator_app(conf, transport=None):
    """The HTTP part of :func:`accelerator_service`, for a WSGI server's
    workers (:mod:`nimbus.wsgi.accelerator`): the same app, its RPC server
    and binder left unstarted (they run in ``nimbus-accelerator-api``,
    whose binder finds the binds recorded here at its next poll)."""
    return accelerator_service(conf, transport).app


def accelerator_agents(conf, hosts, transport=None, placement_app=None):
    """The accelerator agents of ``hosts`` (one real host, or simulated
    ones) on one transport and one placement session, reporting their
    devices to the accelerator service and to placement; not started.
    ``placement_app``: as for :func:`simulated_computes`."""
    from nimbus.accelerator.agent import conf as agent_conf
    from nimbus.accelerator.agent import group as agent_group
    from nimbus.accelerator import rpcapi as accel_rpcapi
    from nimbus.messaging_internals import simulated

    agent_conf.register_opts(conf)
    simulated.register_opts(conf)
    transport = transport or rpc.get_transport(conf)
    client = placement_client.PlacementClient.from_conf(
        conf,
        session=_in_process(
            placement_client.placement_session(conf.simulated_hosts.workers),
            conf,
            placement_app,
        ),
    )
    return agent_group.build_agents(
        conf,
        transport,
        client,
        accel_rpcapi.AcceleratorAPI(transport),
        hosts,
        trees=_tree_writer(placement_app),
    )
