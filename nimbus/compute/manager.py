"""The RPC endpoint of nimbus-compute: thin, it hands work to domain code.

Builds and deletes run on a thread pool so the RPC server keeps reading
messages while guests spawn.
"""

from concurrent import futures

from oslo_log import log as logging
import oslo_messaging as messaging

from nimbus.common import rpc
from nimbus.common.objects import base as objects_base
from nimbus.common.objects import instance as instance_obj
from nimbus.common.objects import request_spec as spec_obj
from nimbus.common.objects import selection as selection_obj
from nimbus.compute import rpcapi

LOG = logging.getLogger(__name__)


class ComputeManager:
    target = messaging.Target(version=rpcapi.VERSION)

    def __init__(self, runner, events, workers=8, pool=None):
        """``pool``: an executor shared with other hosts of the process
        (simulated hosts); not shut down here. Default: a pool of
        ``workers`` threads of this host's own."""
        self.runner = runner
        self.events = events
        self._shared = pool is not None
        self._pool = pool or futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix='build'
        )

    def _submit(self, func, *args):
        ctxt = args[0] if args else None

        def run():
            if ctxt is not None:
                # oslo.log reads the request id from the thread's context.
                ctxt.update_store()
            try:
                func(*args)
            except Exception:
                LOG.exception('%s failed', getattr(func, '__name__', func))

        return self._pool.submit(run)

    @rpc.expose(
        cast=True,
        required=('instance', 'request_spec', 'selection'),
        types={
            'instance': dict,
            'request_spec': dict,
            'selection': dict,
            'host_list': list,
            'accel_uuids': list,
        },
    )
    def build_and_run_instance(
        self,
        ctxt,
        instance,
        request_spec,
        selection,
        host_list=None,
        accel_uuids=None,
    ):
        # The contracts, converted once on arrival.
        try:
            target = instance_obj.Instance.from_primitive(instance)
            spec = spec_obj.RequestSpec.from_primitive(request_spec)
            chosen = selection_obj.Selection.from_primitive(selection)
            alternates = selection_obj.list_from_primitive(host_list or [])
        except objects_base.MalformedPrimitive as exc:
            raise rpc.InvalidMessage('build_and_run_instance: %s' % exc)
        # Journalled as they came (primitives): a restart hands them back.
        if not self.runner.taken(
            target, request_spec, selection, host_list or []
        ):
            LOG.info(
                'Dropped a duplicate build of %s: it is under way here',
                target.uuid,
            )
            return
        self._submit(
            self.runner.build,
            ctxt,
            target,
            spec,
            chosen,
            alternates,
            accel_uuids or [],
        )

    @rpc.expose(
        cast=True, required=('instance_uuid',), types={'instance_uuid': str}
    )
    def terminate_instance(self, ctxt, instance_uuid):
        self._submit(self.runner.terminate, ctxt, instance_uuid)

    @rpc.expose(
        cast=True,
        required=('instance_uuid', 'events'),
        types={'instance_uuid': str, 'events': list},
    )
    def external_instance_event(self, ctxt, instance_uuid, events):
        if not all(
            isinstance(e, dict) and isinstance(e.get('name'), str)
            for e in events
        ):
            raise rpc.InvalidMessage(
                'external_instance_event: events must be dicts with a name'
            )
        self.events.deliver(instance_uuid, events)

    @rpc.expose(expected=(NotImplementedError,))
    def get_host_uptime(self, ctxt):
        """Call: the driver's uptime string (NotImplementedError when the
        driver cannot tell)."""
        return self.runner.driver.get_host_uptime()

    def shutdown(self, wait=True):
        """Not an RPC method (not exposed): the service calls it."""
        if not self._shared:
            self._pool.shutdown(wait=wait, cancel_futures=not wait)
