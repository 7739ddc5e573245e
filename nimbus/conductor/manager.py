"""RPC endpoints of the conductors: thin, they delegate to the domain classes.

The super conductor runs schedule-and-build on a thread pool (a cast must
not hold the RPC server's thread while the scheduler works).
"""

from concurrent import futures

from oslo_log import log as logging
import oslo_messaging as messaging

from nimbus.common import rpc
from nimbus.conductor import rpcapi

LOG = logging.getLogger(__name__)


class SuperConductorManager:
    target = messaging.Target(version=rpcapi.VERSION)

    def __init__(self, super_conductor, workers=8):
        self.conductor = super_conductor
        self._pool = futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix='schedule')

    @rpc.expose(cast=True, required=('request_spec', 'instance_uuids'))
    def schedule_and_build_instances(self, ctxt, request_spec,
                                     instance_uuids):
        if not isinstance(request_spec, dict) or not isinstance(
                instance_uuids, list):
            LOG.error('Dropped malformed schedule_and_build_instances')
            return

        def run():
            ctxt.update_store()
            try:
                self.conductor.schedule_and_build_instances(
                    ctxt, request_spec, instance_uuids)
            except Exception:
                LOG.exception('schedule_and_build_instances failed for %s',
                              instance_uuids)
        self._pool.submit(run)

    def shutdown(self):
        self._pool.shutdown(wait=True)


class CellConductorManager:
    target = messaging.Target(version=rpcapi.VERSION)

    def __init__(self, cell_conductor):
        self.conductor = cell_conductor

    @rpc.expose(cast=True, required=('instance_uuid', 'request_spec',
                                     'host_list'))
    def build_instances(self, ctxt, instance_uuid, request_spec, host_list,
                        failed_host=None, reason=None):
        self.conductor.build_instances(ctxt, instance_uuid, request_spec,
                                       host_list, failed_host, reason)

    @rpc.expose(required=('instance_uuid', 'expected_vm_states', 'updates'))
    def instance_update(self, ctxt, instance_uuid, expected_vm_states,
                        updates):
        try:
            return self.conductor.instance_update(
                ctxt, instance_uuid, expected_vm_states, updates)
        except (ValueError, KeyError, TypeError) as exc:
            raise rpc.InvalidMessage('instance_update: %s' % exc)

    @rpc.expose(required=('instance_uuid', 'host', 'result'))
    def record_build_attempt(self, ctxt, instance_uuid, host, node, result,
                             reason=None):
        self.conductor.record_build_attempt(ctxt, instance_uuid, host, node,
                                            result, reason)

    @rpc.expose(required=('host', 'binary'))
    def service_heartbeat(self, ctxt, host, binary, availability_zone=None):
        return self.conductor.service_heartbeat(ctxt, host, binary,
                                                availability_zone)

    @rpc.expose(required=('node',))
    def compute_node_update(self, ctxt, node):
        if not isinstance(node, dict) or 'uuid' not in node:
            raise rpc.InvalidMessage('compute_node_update: node needs uuid')
        return self.conductor.compute_node_update(ctxt, node)

    @rpc.expose(required=('host',))
    def instances_on_host(self, ctxt, host):
        return self.conductor.instances_on_host(ctxt, host)
