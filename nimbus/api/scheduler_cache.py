"""What the compute API tells the schedulers' caches.

Every scheduler keeps host states with the aggregates, services, server
groups and instances of each host (``nimbus.scheduler.host_manager``). When
a request of the compute API changes one of them, the API sends a fanout
cast through the scheduler's rpcapi so that every scheduler updates its
cache at once instead of at its next full reload.

One function per event, each calling its rpcapi method by name in code
(a misspelt method is an AttributeError the tests meet, not a silent
no-op) with its typed contract (``nimbus.common.objects.host_events``).
A cast is a hint: it never fails the request that caused it; a scheduler
that misses one catches up at its next reload.
"""

from oslo_log import log as logging

from nimbus.api import util
from nimbus.common.objects import AggregateInfo
from nimbus.common.objects import ServerGroupInfo
from nimbus.common.objects import ServiceInfo

LOG = logging.getLogger(__name__)


def _send(req, what, cast):
    api = util.deps(req).scheduler_api
    if api is None:
        return
    try:
        cast(api, util.ctx(req))
    except Exception:
        LOG.warning('Could not tell the schedulers %s', what, exc_info=True)


def aggregate_changed(req, aggregate: AggregateInfo):
    """An aggregate was created, renamed, or its hosts or metadata changed."""
    _send(
        req,
        'that aggregate %s changed' % aggregate.uuid,
        lambda api, ctx: api.update_aggregates(ctx, [aggregate]),
    )


def aggregate_deleted(req, aggregate: AggregateInfo):
    _send(
        req,
        'that aggregate %s was deleted' % aggregate.uuid,
        lambda api, ctx: api.delete_aggregate(ctx, aggregate),
    )


def service_changed(req, service: ServiceInfo):
    """A compute service was enabled, disabled or forced down."""
    _send(
        req,
        'that service %s/%s changed' % (service.host, service.binary),
        lambda api, ctx: api.update_service(ctx, service),
    )


def server_group_changed(req, group: ServerGroupInfo):
    """A server group was created or got new members."""
    _send(
        req,
        'that server group %s changed' % group.uuid,
        lambda api, ctx: api.update_server_group(ctx, group),
    )


def server_group_deleted(req, group_uuid):
    _send(
        req,
        'that server group %s was deleted' % group_uuid,
        lambda api, ctx: api.delete_server_group(ctx, group_uuid),
    )


def instance_deleted(req, host, instance_uuid):
    """The instance is gone from ``host``."""
    _send(
        req,
        'about the delete of %s' % instance_uuid,
        lambda api, ctx: api.delete_instance_info(ctx, host, instance_uuid),
    )
