"""RPC client of nimbus-compute (topic ``compute``, ``server=<host>``).

Messages go over the bus of the compute's cell; the caller builds this
client with that cell's transport.

Version history
  1.0  build_and_run_instance, terminate_instance, external_instance_event.
  1.1  get_host_uptime (a call; os-hypervisors/{id}/uptime).
"""

from nimbus.common import rpc
from nimbus.common.objects import selection as selection_obj

TOPIC = 'compute'
VERSION = '1.1'


class ComputeAPI:
    def __init__(self, transport, conf=None):
        self._transport = transport
        self._conf = conf
        self._clients = {}

    def _client(self, host):
        client = self._clients.get(host)
        if client is None:
            client = self._clients[host] = rpc.get_client(
                self._transport, TOPIC, VERSION, server=host, conf=self._conf
            )
        return client

    def build_and_run_instance(
        self,
        ctxt,
        host,
        instance,
        request_spec,
        selection,
        host_list,
        accel_uuids=None,
    ):
        """Cast: build ``instance`` (an Instance) on ``host`` for
        ``request_spec`` (a RequestSpec).

        ``selection`` is the Selection whose allocation was claimed for this
        host; ``host_list`` holds the alternates (Selections) left for a
        reschedule. Idempotent: a copy that arrives while the compute builds
        the instance is dropped, one that arrives later finds it no longer
        building and does nothing.
        """
        self._client(host).prepare(version='1.0').cast(
            ctxt,
            'build_and_run_instance',
            instance=instance.to_primitive(),
            request_spec=request_spec.to_primitive(),
            selection=selection.to_primitive(),
            host_list=selection_obj.list_to_primitive(host_list),
            accel_uuids=accel_uuids or [],
        )

    def terminate_instance(self, ctxt, host, instance_uuid):
        """Cast: destroy the guest and free its allocations."""
        self._client(host).prepare(version='1.0').cast(
            ctxt, 'terminate_instance', instance_uuid=instance_uuid
        )

    def external_instance_event(self, ctxt, host, instance_uuid, events):
        """Cast: deliver external events (``accelerator-request-bound``)."""
        self._client(host).prepare(version='1.0').cast(
            ctxt,
            'external_instance_event',
            instance_uuid=instance_uuid,
            events=events,
        )

    def get_host_uptime(self, ctxt, host):
        """Call: the host's uptime string, as its virt driver tells it.
        Raises NotImplementedError when the driver cannot tell."""
        return (
            self._client(host)
            .prepare(version='1.1')
            .call(ctxt, 'get_host_uptime')
        )
