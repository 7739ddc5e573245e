"""RPC endpoints of the conductors: thin, they delegate to the domain classes.

The endpoints of moves, live migrations and the end of cross-cell moves
are mixins (:mod:`~nimbus.conductor.move_endpoints`,
:mod:`~nimbus.conductor.live_endpoints`,
:mod:`~nimbus.conductor.cross_cell_endpoints`).

Every method checks its message before it delegates (see
:func:`nimbus.common.rpc.expose`); a malformed call is answered with
InvalidMessage, a malformed cast is logged and dropped. The super conductor
runs schedule-and-build on a thread pool (a cast must not hold the RPC
server's thread while the scheduler works).
"""

from concurrent import futures

from oslo_log import log as logging
import oslo_messaging as messaging

from nimbus.common import instance_states as states
from nimbus.common import rpc
from nimbus.common.objects import action_event as event_obj
from nimbus.common.objects import build_attempt as attempt_obj
from nimbus.common.objects import compute_node as node_obj
from nimbus.common.objects import heartbeats as heartbeats_obj
from nimbus.common.objects import instance_update as update_obj
from nimbus.common.objects import request_spec as spec_obj
from nimbus.common.objects import selection as selection_obj
from nimbus.conductor import cross_cell_endpoints
from nimbus.conductor import live_endpoints
from nimbus.conductor import move_endpoints
from nimbus.conductor import rpcapi

LOG = logging.getLogger(__name__)

_OPTIONAL_STR = (str, type(None))


def _uuid_list(name, value):
    if not value or not all(isinstance(u, str) and u for u in value):
        raise rpc.InvalidMessage('%s must be a non-empty list of uuids' % name)


def _contract(convert, value):
    """``convert(value)`` (a contract's from_primitive): the message's
    object, converted once on arrival; InvalidMessage when malformed."""
    with rpc.arriving():
        return convert(value)


def _host_list(value):
    host_list = _contract(selection_obj.list_from_primitive, value)
    if any(s.allocation_request is None for s in host_list):
        raise rpc.InvalidMessage(
            'host_list must hold Selections with an allocation_request'
        )
    return host_list


class SuperConductorManager(
    move_endpoints.SuperMoveEndpoints,
    live_endpoints.SuperLiveEndpoints,
    cross_cell_endpoints.SuperCrossCellEndpoints,
):
    target = messaging.Target(version=rpcapi.VERSION)

    def __init__(self, super_conductor, workers=8):
        self.conductor = super_conductor
        self._pool = futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix='schedule'
        )

    @rpc.expose(
        cast=True,
        required=('request_spec', 'instance_uuids'),
        types={'request_spec': dict, 'instance_uuids': list},
    )
    def schedule_and_build_instances(self, ctxt, request_spec, instance_uuids):
        _uuid_list('instance_uuids', instance_uuids)
        spec = _contract(spec_obj.RequestSpec.from_primitive, request_spec)
        self._submit(
            ctxt,
            lambda: self.conductor.schedule_and_build_instances(
                ctxt, spec, instance_uuids
            ),
            'schedule_and_build_instances failed for %s',
            instance_uuids,
        )

    def _submit(self, ctxt, work, failed, *what):
        """``work()`` on the pool, in ``ctxt``; when it raises, ``failed %
        what`` is logged with the traceback."""

        def run():
            ctxt.update_store()
            try:
                work()
            except Exception:
                LOG.exception(failed, *what)

        self._pool.submit(run)

    # The cast endpoints (here and in the mixins) look alike (their message
    # checked, then their work run here): deliberately, one declaration
    # per RPC method.
    def _run(self, name, func, ctxt, *args):
        self._submit(
            ctxt, lambda: func(ctxt, *args), '%s of %s failed', name, args[0]
        )

    def shutdown(self):
        """Not an RPC method (not exposed): the service calls it."""
        self._pool.shutdown(wait=True)


class CellConductorManager(
    move_endpoints.CellMoveEndpoints, live_endpoints.CellLiveEndpoints
):
    target = messaging.Target(version=rpcapi.VERSION)

    def __init__(self, cell_conductor):
        self.conductor = cell_conductor

    @rpc.expose(
        cast=True,
        required=('instance_uuid', 'request_spec', 'host_list'),
        types={
            'instance_uuid': str,
            'request_spec': dict,
            'host_list': list,
            'failed_host': _OPTIONAL_STR,
            'reason': _OPTIONAL_STR,
        },
    )
    def build_instances(
        self,
        ctxt,
        instance_uuid,
        request_spec,
        host_list,
        failed_host=None,
        reason=None,
    ):
        self.conductor.build_instances(
            ctxt,
            instance_uuid,
            _contract(spec_obj.RequestSpec.from_primitive, request_spec),
            _host_list(host_list),
            failed_host,
            reason,
        )

    @rpc.expose(
        required=('instance_uuid', 'expected_vm_states', 'updates'),
        types={
            'instance_uuid': str,
            'expected_vm_states': list,
            'updates': dict,
            'expected_host': _OPTIONAL_STR,
            'build_attempt': (dict, type(None)),
            'expected_task_states': (list, type(None)),
            'brief': bool,
        },
    )
    def instance_update(
        self,
        ctxt,
        instance_uuid,
        expected_vm_states,
        updates,
        expected_host=None,
        build_attempt=None,
        expected_task_states=None,
        brief=False,
    ):
        change = _contract(update_obj.InstanceUpdate.from_primitive, updates)
        if build_attempt is not None:
            build_attempt = _contract(
                attempt_obj.BuildAttempt.from_primitive, build_attempt
            )
        unknown = [s for s in expected_vm_states if s not in states.VM_STATES]
        if unknown or (
            change.vm_state is not update_obj.UNSET
            and change.vm_state not in states.VM_STATES
        ):
            raise rpc.InvalidMessage(
                'instance_update: unknown vm_state(s) '
                '%s' % (unknown or change.vm_state)
            )
        if expected_task_states is not None:
            unknown = [
                t for t in expected_task_states if t not in states.TASK_STATES
            ]
            if unknown:
                raise rpc.InvalidMessage(
                    'instance_update: unknown task_state(s) %s' % unknown
                )
        try:
            done = self.conductor.instance_update(
                ctxt,
                instance_uuid,
                expected_vm_states,
                change,
                expected_host,
                build_attempt,
                expected_task_states,
                brief,
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise rpc.InvalidMessage('instance_update: %s' % exc) from exc
        if done is None:
            return None
        return True if brief else done.to_primitive()

    @rpc.expose(required=('event',), types={'event': dict})
    def instance_action_event(self, ctxt, event):
        return self.conductor.instance_action_event(
            ctxt, _contract(event_obj.ActionEvent.from_primitive, event)
        )

    @rpc.expose(
        required=('instance_uuid', 'host', 'result'),
        types={
            'instance_uuid': str,
            'host': str,
            'node': _OPTIONAL_STR,
            'result': str,
            'reason': _OPTIONAL_STR,
        },
    )
    def record_build_attempt(
        self, ctxt, instance_uuid, host, node, result, reason=None
    ):
        self.conductor.record_build_attempt(
            ctxt, instance_uuid, host, node, result, reason
        )

    @rpc.expose(
        required=('host', 'binary'),
        types={'host': str, 'binary': str, 'availability_zone': _OPTIONAL_STR},
    )
    def service_heartbeat(self, ctxt, host, binary, availability_zone=None):
        return self.conductor.service_heartbeat(
            ctxt, host, binary, availability_zone
        )

    @rpc.expose(required=('heartbeats',), types={'heartbeats': dict})
    def service_heartbeats(self, ctxt, heartbeats):
        return self.conductor.service_heartbeats(
            ctxt,
            _contract(
                heartbeats_obj.ServiceHeartbeats.from_primitive, heartbeats
            ),
        )

    @rpc.expose(
        required=('host', 'binary', 'reason'),
        types={'host': str, 'binary': str, 'reason': str},
    )
    def service_disable(self, ctxt, host, binary, reason):
        return self.conductor.service_disable(ctxt, host, binary, reason)

    @rpc.expose(
        required=('group_uuid',),
        types={'group_uuid': str, 'exclude': _OPTIONAL_STR},
    )
    def group_members(self, ctxt, group_uuid, exclude=None):
        return [
            m.to_primitive()
            for m in self.conductor.group_members(ctxt, group_uuid, exclude)
        ]

    @rpc.expose(required=('node',), types={'node': dict})
    def compute_node_update(self, ctxt, node):
        record = _contract(node_obj.ComputeNodeRecord.from_primitive, node)
        return self.conductor.compute_node_update(ctxt, record)

    @rpc.expose(required=('nodes',), types={'nodes': list})
    def compute_nodes_update(self, ctxt, nodes):
        records = [
            _contract(node_obj.ComputeNodeRecord.from_primitive, node)
            for node in nodes
        ]
        return self.conductor.compute_nodes_update(ctxt, records)

    @rpc.expose(
        required=('host', 'seconds'), types={'host': str, 'seconds': int}
    )
    def reclaimable(self, ctxt, host, seconds):
        if seconds < 0:
            raise rpc.InvalidMessage('reclaimable: seconds must be >= 0')
        return self.conductor.reclaimable(ctxt, host, seconds)

    @rpc.expose(
        required=('host', 'seconds'), types={'host': str, 'seconds': int}
    )
    def shelved_offloadable(self, ctxt, host, seconds):
        if seconds < 0:
            raise rpc.InvalidMessage('shelved_offloadable: seconds >= 0')
        return self.conductor.shelved_offloadable(ctxt, host, seconds)

    @rpc.expose(required=('hosts',), types={'hosts': list})
    def hosts_with_records(self, ctxt, hosts):
        if not all(isinstance(h, str) and h for h in hosts):
            raise rpc.InvalidMessage('hosts_with_records: host names')
        return self.conductor.hosts_with_records(ctxt, hosts)

    @rpc.expose(required=('hosts',), types={'hosts': list})
    def instances_on_hosts(self, ctxt, hosts):
        if len(hosts) > heartbeats_obj.MAX_HOSTS or not all(
            isinstance(h, str) and h for h in hosts
        ):
            raise rpc.InvalidMessage(
                'instances_on_hosts: at most %d host names'
                % heartbeats_obj.MAX_HOSTS
            )
        return {
            host: [i.to_primitive() for i in found]
            for host, found in self.conductor.instances_on_hosts(
                ctxt, hosts
            ).items()
        }

    @rpc.expose(required=('host',), types={'host': str})
    def instances_on_host(self, ctxt, host):
        return [
            i.to_primitive()
            for i in self.conductor.instances_on_host(ctxt, host)
        ]
