"""Composition of the accelerator service, for the daemon and the
integrator (``nimbus/services.py``, the all-in-one runner).

:func:`build_accelerator_service` wires one process's accelerator service::

    svc = build_accelerator_service(conf, transport, agent_api,
                                    compute_events)
    svc.start()          # RPC server (topic accelerator) + binder thread
    app = svc.app        # the WSGI app; serve it (nimbus.common.wsgi.serve)
    ...
    svc.stop()

``agent_api`` is the agents' RPC client (``AgentAPI(transport)`` of
``nimbus.accelerator.agent.rpcapi``: ``program`` call, ``release`` cast),
or None to build it by name from that module (while that module is not
installed, :class:`MissingAgentAPI` stands in and every bind fails saying
so).
``compute_events`` sends accelerator-request-bound events
(:class:`~nimbus.accelerator.compute_events.ComputeEvents`); None builds it
from ``[compute_client]`` (and with no endpoint set, events wait in the
database until one is).
"""

import importlib

from oslo_log import log as logging

from nimbus.accelerator import binder as binder_mod
from nimbus.accelerator import compute_events
from nimbus.accelerator import manager
from nimbus.accelerator import rpcapi
from nimbus.accelerator.api import wsgi as accel_wsgi
from nimbus.common import service

LOG = logging.getLogger(__name__)

AGENT_RPCAPI = 'nimbus.accelerator.agent.rpcapi'


class MissingAgentAPI:
    """Stands in while ``nimbus.accelerator.agent.rpcapi`` is not
    installed: every bind fails with a reason that says so (and its failed
    event is sent), rather than the service refusing to start."""

    def program(self, ctxt, host, arq):
        raise RuntimeError(
            'no accelerator agent RPC API is installed (%s)' % AGENT_RPCAPI
        )

    def release(self, ctxt, host, arq):
        LOG.warning(
            'Cannot ask %s to release %s: no accelerator agent RPC '
            'API is installed',
            host,
            arq.get('uuid'),
        )


def _agent_api(transport):
    try:
        module = importlib.import_module(AGENT_RPCAPI)
    except ImportError as exc:
        if AGENT_RPCAPI not in str(exc) and 'agent' not in str(exc):
            raise
        LOG.error('%s is not installed: binds will fail', AGENT_RPCAPI)
        return MissingAgentAPI()
    return module.AgentAPI(transport)


class AcceleratorService:
    """The RPC server, the binder and the WSGI app of one process."""

    def __init__(self, conf, adb, rpc_service, binder, app):
        self.conf = conf
        self.adb = adb
        self.rpc_service = rpc_service
        self.binder = binder
        self.app = app

    def start(self):
        self.rpc_service.start()
        self.binder.start()
        return self

    def stop(self):
        self.binder.stop()
        self.rpc_service.stop()


def build_accelerator_service(
    conf, transport, agent_api=None, compute_client=None
):
    """The accelerator service of ``conf`` on ``transport`` (the API bus);
    see the module docstring. Migrates the database first unless
    ``[accelerator_database] sync_on_startup`` is off."""
    adb = accel_wsgi.make_adb(conf)
    if agent_api is None:
        agent_api = _agent_api(transport)
    if compute_client is None:
        compute_client = compute_events.from_conf(conf)
    opts = conf.accelerator_api
    binder = binder_mod.Binder(
        adb,
        agent_api,
        compute_client,
        poll_interval=opts.bind_poll_interval,
        retry_initial=opts.event_retry_initial,
        retry_max=opts.event_retry_max,
    )
    rpc_service = service.RPCService(
        transport,
        rpcapi.TOPIC,
        conf.host,
        [manager.AcceleratorManager(adb)],
        version=rpcapi.VERSION,
    )
    app = accel_wsgi.make_app(conf, binder=binder, agent=agent_api, adb=adb)
    return AcceleratorService(conf, adb, rpc_service, binder, app)
