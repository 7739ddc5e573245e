"""RPC client of the scheduler (topic ``scheduler`` on the API bus): the only place that
knows its method names and versions.

Version history
  1.0  select_destinations, dry_run (calls); update_aggregates, delete_aggregate,
       update_instance_info, delete_instance_info, sync_instance_info,
       update_compute_node, update_service, update_server_group, refresh_host_states
       (casts).
  1.1  delete_server_group (cast).
  1.2  capacity (call): how many more of a flavor fit, and where.
"""

from nimbus.common import rpc
from nimbus.common.objects import selection as selection_obj

TOPIC = 'scheduler'
VERSION = '1.2'


class SchedulerAPI:
    """``SchedulerAPI(transport, conf=None)``."""

    def __init__(self, transport, conf=None):
        self._client = rpc.get_client(transport, TOPIC, VERSION, conf=conf)
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
        """Cast (fanout to every scheduler): aggregates created or changed."""
        self._cast(ctxt, 'update_aggregates', aggregates=aggregates)

    def delete_aggregate(self, ctxt, aggregate):
        self._cast(ctxt, 'delete_aggregate', aggregate=aggregate)

    def update_instance_info(self, ctxt, host_name, instance_info):
        """Cast: instance(s) (dict or list of dicts with ``uuid``) now on ``host_name``."""
        self._cast(
            ctxt,
            'update_instance_info',
            host_name=host_name,
            instance_info=instance_info,
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

    def update_compute_node(self, ctxt, compute_node):
        """Cast: a compute node record (HostInfoSource.compute_nodes shape) changed."""
        self._cast(ctxt, 'update_compute_node', compute_node=compute_node)

    def update_service(self, ctxt, service):
        self._cast(ctxt, 'update_service', service=service)

    def update_server_group(self, ctxt, group):
        self._cast(ctxt, 'update_server_group', group=group)

    def delete_server_group(self, ctxt, group_uuid):
        """Cast (fanout): the server group is gone (DELETE /os-server-groups/{id})."""
        self._client.prepare(version='1.1', fanout=True).cast(
            ctxt, 'delete_server_group', group_uuid=group_uuid
        )

    def refresh_host_states(self, ctxt):
        self._cast(ctxt, 'refresh_host_states')
