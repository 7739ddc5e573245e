"""RPC client of the scheduler (topic ``scheduler`` on the API bus): the only place that
knows its method names and versions.

Version history
  1.0  select_destinations, dry_run (calls); update_aggregates, delete_aggregate,
       update_instance_info, delete_instance_info, sync_instance_info,
       update_service, update_server_group, refresh_host_states (casts);
       and update_compute_node, a cast nothing sent (the computes report to
       their cell conductor), removed: the full reload reads compute nodes.
  1.1  delete_server_group (cast).
  1.2  capacity (call): how many more of a flavor fit, and where.

The cache events' bodies are contracts (nimbus.common.objects.host_events:
AggregateInfo, InstanceInfo, ServiceInfo, ServerGroupInfo), sent as their
primitives; a scheduler also takes the unversioned dicts sent before them.
"""

from nimbus.common import rpc
from nimbus.common.rpc import options as rpc_options
from nimbus.common.objects import selection as selection_obj

TOPIC = 'scheduler'
VERSION = '1.2'


class SchedulerAPI:
    """``SchedulerAPI(transport, conf=None)``."""

    def __init__(self, transport, conf=None):
        self._client = rpc.get_client(
            transport,
            TOPIC,
            VERSION,
            conf=conf,
            version_cap=rpc_options.version_cap(conf, 'scheduler'),
        )
        self._conf = conf

    def _long_call(self):
        """A multi-create of thousands of instances can take minutes: the
        call may last up to ``[rpc] long_rpc_timeout`` as long as the
        scheduler heartbeats (oslo.messaging's call monitor) at least every
        ``[rpc] rpc_call_monitor_timeout`` seconds."""
        if self._conf is None:
            return self._client.prepare(
                version='1.0', timeout=1800, call_monitor_timeout=30
            )
        return self._client.prepare(
            version='1.0',
            timeout=self._conf.rpc.long_rpc_timeout,
            call_monitor_timeout=self._conf.rpc.rpc_call_monitor_timeout
            or None,
        )

    def select_destinations(
        self, ctxt, request_spec, instance_uuids, return_alternates=True
    ):
        """Call: per instance, ``[selected, *alternates]`` Selections
        (contracts.md) for ``request_spec`` (a RequestSpec). Raises
        NoValidHost (with ``explanation``) when fewer than min_count fit.
        Heartbeats, so a long multi-create never times out while the
        scheduler works."""
        answer = self._long_call().call(
            ctxt,
            'select_destinations',
            request_spec=request_spec.to_primitive(),
            instance_uuids=instance_uuids,
            return_alternates=return_alternates,
        )
        return [selection_obj.list_from_primitive(s) for s in answer]

    def dry_run(self, ctxt, request_spec):
        """Call: ranked hosts with every weigher's raw/normalised/weighted value, and
        rejected hosts with reasons. Claims nothing."""
        return self._client.prepare(version='1.0').call(
            ctxt, 'dry_run', request_spec=request_spec.to_primitive()
        )

    def capacity(self, ctxt, request_spec, per_host=True):
        """1.2: how many more of the request's flavor fit, and where."""
        return self._client.prepare(version='1.2').call(
            ctxt,
            'capacity',
            request_spec=request_spec.to_primitive(),
            per_host=per_host,
        )

    def _cast(self, ctxt, method, **kwargs):
        self._client.prepare(version='1.0', fanout=True).cast(
            ctxt, method, **kwargs
        )

    def update_aggregates(self, ctxt, aggregates):
        """Cast (fanout to every scheduler): aggregates (AggregateInfo)
        created or changed."""
        self._cast(
            ctxt,
            'update_aggregates',
            aggregates=[a.to_primitive() for a in aggregates],
        )

    def delete_aggregate(self, ctxt, aggregate):
        """Cast: the aggregate (an AggregateInfo) is gone."""
        self._cast(
            ctxt, 'delete_aggregate', aggregate=aggregate.to_primitive()
        )

    def update_instance_info(self, ctxt, host_name, instance_info):
        """Cast: instance(s) (an InstanceInfo or a list of them) now on
        ``host_name``."""
        if isinstance(instance_info, list):
            body = [i.to_primitive() for i in instance_info]
        else:
            body = instance_info.to_primitive()
        self._cast(
            ctxt,
            'update_instance_info',
            host_name=host_name,
            instance_info=body,
        )

    def delete_instance_info(self, ctxt, host_name, instance_uuid):
        """Cast: the instance was deleted (``host_name`` may be None: every host
        is searched)."""
        self._cast(
            ctxt,
            'delete_instance_info',
            host_name=host_name,
            instance_uuid=instance_uuid,
        )

    def sync_instance_info(self, ctxt, host_name, instance_uuids):
        """Cast: the complete list of instance uuids on ``host_name``."""
        self._cast(
            ctxt,
            'sync_instance_info',
            host_name=host_name,
            instance_uuids=instance_uuids,
        )

    def update_service(self, ctxt, service):
        """Cast: a compute service (a ServiceInfo) changed."""
        self._cast(ctxt, 'update_service', service=service.to_primitive())

    def update_server_group(self, ctxt, group):
        """Cast: a server group (a ServerGroupInfo) created or grown."""
        self._cast(ctxt, 'update_server_group', group=group.to_primitive())

    def delete_server_group(self, ctxt, group_uuid):
        """Cast (fanout): the server group is gone (DELETE /os-server-groups/{id})."""
        self._client.prepare(version='1.1', fanout=True).cast(
            ctxt, 'delete_server_group', group_uuid=group_uuid
        )

    def refresh_host_states(self, ctxt):
        self._cast(ctxt, 'refresh_host_states')
