"""The scheduler's RPC endpoint: thin. It validates messages, turns dicts into a
RequestSpec and delegates to :class:`~nimbus.scheduler.driver.Scheduler` and the
:class:`~nimbus.scheduler.host_manager.HostManager`.

Methods (see ``rpcapi.py`` for call/cast and versions): ``select_destinations``,
``dry_run``, ``update_aggregates``, ``delete_aggregate``, ``update_instance_info``,
``delete_instance_info``, ``sync_instance_info``, ``update_service``,
``update_server_group``, ``delete_server_group``, ``refresh_host_states``.
"""

from __future__ import annotations

import oslo_messaging as messaging
from oslo_log import log as logging
from oslo_config import cfg

from nimbus.common import rpc
from nimbus.common.objects.host_events import AggregateInfo
from nimbus.common.objects.host_events import InstanceInfo
from nimbus.common.objects.host_events import ServerGroupInfo
from nimbus.common.objects.host_events import ServiceInfo
from nimbus.common.objects.request_spec import RequestSpec
from nimbus.common.objects.selection import list_to_primitive
from nimbus.scheduler import conf as sched_conf
from nimbus.scheduler import driver, exception, host_manager
from nimbus.scheduler.rpcapi import VERSION

LOG = logging.getLogger(__name__)


def _event(convert, value):
    """A cache event's contract, converted once on arrival."""
    with rpc.arriving():
        return convert(value)


def _spec(request_spec) -> RequestSpec:
    """The RequestSpec of a message (converted once, on arrival)."""
    return _event(RequestSpec.from_primitive, request_spec)


class SchedulerManager:
    """``SchedulerManager(conf, placement, host_info_source=None, host_manager=None,
    record=None)``. Give either a HostInfoSource or a ready HostManager."""

    target = messaging.Target(version=VERSION)

    def __init__(
        self,
        conf,
        placement,
        host_info_source=None,
        host_manager=None,
        record=None,
        periodic_refresh: float | None = None,
        periodic_full_refresh: float | None = None,
        notifier=None,
    ):
        """``periodic_refresh``: seconds between service reloads;
        ``periodic_full_refresh``: seconds between full reloads (both off
        when None)."""
        self.conf = conf
        if host_manager is None:
            if host_info_source is None:
                raise ValueError('need a host_info_source or a host_manager')
            host_manager = host_manager_mod.HostManager(conf, host_info_source)
        self.host_manager = host_manager
        self.driver = driver.Scheduler(
            conf, placement, host_manager, record=record, notifier=notifier
        )
        self._periodic = []
        from nimbus.common import service

        for interval, func, name in (
            (
                periodic_refresh,
                self.host_manager.refresh_services,
                'scheduler-service-refresh',
            ),
            (
                periodic_full_refresh,
                self.host_manager.refresh,
                'scheduler-host-refresh',
            ),
        ):
            if interval:
                self._periodic.append(
                    service.Periodic(
                        interval, self._guarded(func), name=name
                    ).start()
                )

    @staticmethod
    def _guarded(func):
        def run():
            try:
                func()
            except Exception:
                LOG.exception('host state refresh failed')

        return run

    def _safe_refresh(self):
        self._guarded(self.host_manager.refresh)()

    def shutdown(self):
        for periodic in self._periodic:
            periodic.stop()

    # ------------------------------------------------------------------ calls
    # NoValidHost is an answer (logged once, at INFO, by the driver), not a
    # failure of the scheduler: no traceback from the RPC server.
    @rpc.expose(required=('request_spec',), expected=(exception.NoValidHost,))
    def select_destinations(
        self,
        ctxt,
        request_spec=None,
        instance_uuids=None,
        return_alternates=True,
    ):
        spec = _spec(request_spec)
        if instance_uuids is not None and not isinstance(instance_uuids, list):
            raise rpc.InvalidMessage('instance_uuids must be a list')
        try:
            result = self.driver.select_destinations(
                ctxt, spec, instance_uuids, bool(return_alternates)
            )
        except exception.InvalidRequest as exc:
            LOG.info('No valid host for %s: %s', spec.instance_uuids, exc)
            raise exception.NoValidHost(
                str(exc), {'message': str(exc)}
            ) from exc
        return [list_to_primitive(selections) for selections in result]

    @rpc.expose(required=('request_spec',))
    def dry_run(self, ctxt, request_spec=None):
        return self.driver.dry_run(ctxt, _spec(request_spec))

    @rpc.expose(required=('request_spec',))
    def capacity(self, ctxt, request_spec=None, per_host=True):
        return self.driver.capacity(ctxt, _spec(request_spec), bool(per_host))

    # ------------------------------------------------------------------ casts
    @rpc.expose(
        cast=True, required=('aggregates',), types={'aggregates': list}
    )
    def update_aggregates(self, ctxt, aggregates=None):
        events = [_event(AggregateInfo.from_primitive, a) for a in aggregates]
        self.host_manager.update_aggregates([e.to_cache() for e in events])

    @rpc.expose(cast=True, required=('aggregate',), types={'aggregate': dict})
    def delete_aggregate(self, ctxt, aggregate=None):
        event = _event(AggregateInfo.from_primitive, aggregate)
        self.host_manager.delete_aggregate(event.to_cache())

    @rpc.expose(
        cast=True,
        required=('host_name', 'instance_info'),
        types={'host_name': str, 'instance_info': (dict, list)},
    )
    def update_instance_info(self, ctxt, host_name=None, instance_info=None):
        infos = (
            instance_info
            if isinstance(instance_info, list)
            else [instance_info]
        )
        events = [_event(InstanceInfo.from_primitive, i) for i in infos]
        self.host_manager.update_instance_info(
            host_name, [e.to_cache() for e in events]
        )

    @rpc.expose(
        cast=True,
        required=('instance_uuid',),
        types={'host_name': str, 'instance_uuid': str},
    )
    def delete_instance_info(self, ctxt, host_name=None, instance_uuid=None):
        self.host_manager.delete_instance_info(host_name, instance_uuid)

    @rpc.expose(
        cast=True,
        required=('host_name', 'instance_uuids'),
        types={'host_name': str, 'instance_uuids': list},
    )
    def sync_instance_info(self, ctxt, host_name=None, instance_uuids=None):
        if not all(isinstance(u, str) for u in instance_uuids):
            raise rpc.InvalidMessage(
                'instance_uuids must be a list of strings'
            )
        self.host_manager.sync_instance_info(host_name, list(instance_uuids))

    @rpc.expose(cast=True, required=('service',), types={'service': dict})
    def update_service(self, ctxt, service=None):
        event = _event(ServiceInfo.from_primitive, service)
        self.host_manager.update_service(event.to_cache())

    @rpc.expose(cast=True, required=('group',), types={'group': dict})
    def update_server_group(self, ctxt, group=None):
        event = _event(ServerGroupInfo.from_primitive, group)
        self.host_manager.update_server_group(event.to_cache())

    @rpc.expose(cast=True, required=('group_uuid',), types={'group_uuid': str})
    def delete_server_group(self, ctxt, group_uuid=None):
        self.host_manager.delete_server_group(group_uuid)

    @rpc.expose(cast=True)
    def refresh_host_states(self, ctxt):
        self._safe_refresh()


host_manager_mod = host_manager


def _service_down_time(conf) -> int:
    """``[DEFAULT] service_down_time`` when the integrator registered it (the
    compute API uses the same option), else Nova's default of 60 seconds."""
    try:
        return int(conf.service_down_time)
    except (AttributeError, cfg.Error):  # a scheduler-only ConfigOpts
        return 60


def build_manager(
    conf,
    placement,
    cells=None,
    api_db=None,
    host_info_source=None,
    notifier=None,
):
    """Assemble a manager from a config: DB-backed host source and explanation records
    unless a source is given."""
    try:
        sched_conf.register_opts(conf)
    except cfg.DuplicateOptError:  # registered differently by the integrator
        pass
    record = None
    if host_info_source is None:
        from nimbus.scheduler import db_source

        host_info_source = db_source.DBHostInfoSource(
            api_db, cells, service_down_time=_service_down_time(conf)
        )
        record = db_source.db_recorder(api_db)
    return SchedulerManager(
        conf,
        placement,
        host_info_source=host_info_source,
        record=record,
        notifier=notifier,
        periodic_refresh=conf.scheduler.host_state_refresh_interval,
        periodic_full_refresh=(
            conf.scheduler.host_state_full_refresh_interval
        ),
    )
