"""The RPC endpoint of nimbus-compute: thin, it hands work to domain code.

Builds and deletes run on a thread pool so the RPC server keeps reading
messages while guests spawn.
"""

from concurrent import futures

from oslo_log import log as logging
import oslo_messaging as messaging

from nimbus.common import rpc
from nimbus.common.objects import instance as instance_obj
from nimbus.common.objects import migration as migration_obj
from nimbus.common.objects import instance_event as event_obj
from nimbus.common.objects import request_spec as spec_obj
from nimbus.common.objects import selection as selection_obj
from nimbus.compute import cross_cell_endpoints
from nimbus.compute import exception
from nimbus.compute import guest_actions as guest_actions_mod
from nimbus.compute import live_endpoints
from nimbus.compute import rpcapi
from nimbus.compute import shelve as shelve_mod

LOG = logging.getLogger(__name__)

# What every server action message carries.
_ACTION = ('instance_uuid', 'request_id')
_ACTION_TYPES = {'instance_uuid': str, 'request_id': str}
# What every resize / cold migrate message carries (1.3).
_MOVE = _ACTION + ('migration',)
_MOVE_TYPES = dict(_ACTION_TYPES, migration=dict)


class ComputeManager(
    live_endpoints.LiveMigrationEndpoints,
    cross_cell_endpoints.CrossCellEndpoints,
):
    target = messaging.Target(version=rpcapi.VERSION)

    def __init__(
        self,
        runner,
        events,
        workers=8,
        pool=None,
        guest_actions=None,
        resizes=None,
        live=None,
    ):
        """``pool``: an executor shared with other hosts of the process
        (simulated hosts); not shut down here. Default: a pool of
        ``workers`` threads of this host's own. ``guest_actions``: the
        :class:`~nimbus.compute.guest_actions.GuestActions` of this host
        (server actions); default: one on the runner's driver and
        conductor. ``live``: the host's
        :class:`~nimbus.compute.live_migration.LiveMigrations`."""
        self.runner = runner
        self.events = events
        self._actions = guest_actions
        self.resizes = resizes
        self.live = live
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
                return func(*args)
            except Exception as exc:
                LOG.exception('%s failed', getattr(func, '__name__', func))
                return {'ok': False, 'error': str(exc)}

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
        with rpc.arriving('build_and_run_instance'):
            target = instance_obj.Instance.from_primitive(instance)
            spec = spec_obj.RequestSpec.from_primitive(request_spec)
            chosen = selection_obj.Selection.from_primitive(selection)
            alternates = selection_obj.list_from_primitive(host_list or [])
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
        with rpc.arriving('external_instance_event'):
            events = event_obj.InstanceEvent.list_from_primitive(events)
        self.events.deliver(instance_uuid, events)

    @rpc.expose(expected=(NotImplementedError,))
    def get_host_uptime(self, ctxt):
        """Call: the driver's uptime string (NotImplementedError when the
        driver cannot tell)."""
        return self.runner.driver.get_host_uptime()

    # -- server actions (1.2) ------------------------------------------------

    @property
    def actions(self):
        if self._actions is None:
            runner = self.runner
            self._actions = guest_actions_mod.GuestActions(
                runner.host, runner.driver, runner.conductor
            )
        return self._actions

    def _act(self, ctxt, name, instance_uuid, request_id, **options):
        self._submit(
            self.actions.run, ctxt, name, instance_uuid, request_id, options
        )

    @rpc.expose(cast=True, required=_ACTION, types=_ACTION_TYPES)
    def stop_instance(self, ctxt, instance_uuid, request_id):
        self._act(ctxt, 'stop', instance_uuid, request_id)

    @rpc.expose(cast=True, required=_ACTION, types=_ACTION_TYPES)
    def start_instance(self, ctxt, instance_uuid, request_id):
        self._act(ctxt, 'start', instance_uuid, request_id)

    @rpc.expose(
        cast=True,
        required=_ACTION + ('reboot_type',),
        types=dict(_ACTION_TYPES, reboot_type=str),
    )
    def reboot_instance(self, ctxt, instance_uuid, request_id, reboot_type):
        if reboot_type not in ('SOFT', 'HARD'):
            raise rpc.InvalidMessage(
                'reboot_instance: reboot_type must be SOFT or HARD'
            )
        name = 'reboot_hard' if reboot_type == 'HARD' else 'reboot'
        self._act(ctxt, name, instance_uuid, request_id)

    @rpc.expose(cast=True, required=_ACTION, types=_ACTION_TYPES)
    def pause_instance(self, ctxt, instance_uuid, request_id):
        self._act(ctxt, 'pause', instance_uuid, request_id)

    @rpc.expose(cast=True, required=_ACTION, types=_ACTION_TYPES)
    def unpause_instance(self, ctxt, instance_uuid, request_id):
        self._act(ctxt, 'unpause', instance_uuid, request_id)

    @rpc.expose(cast=True, required=_ACTION, types=_ACTION_TYPES)
    def suspend_instance(self, ctxt, instance_uuid, request_id):
        self._act(ctxt, 'suspend', instance_uuid, request_id)

    @rpc.expose(cast=True, required=_ACTION, types=_ACTION_TYPES)
    def resume_instance(self, ctxt, instance_uuid, request_id):
        self._act(ctxt, 'resume', instance_uuid, request_id)

    @rpc.expose(
        cast=True,
        required=_ACTION,
        types=dict(_ACTION_TYPES, rescue_image_ref=(str, type(None))),
    )
    def rescue_instance(
        self, ctxt, instance_uuid, request_id, rescue_image_ref=None
    ):
        self._act(
            ctxt,
            'rescue',
            instance_uuid,
            request_id,
            rescue_image_ref=rescue_image_ref,
        )

    @rpc.expose(cast=True, required=_ACTION, types=_ACTION_TYPES)
    def unrescue_instance(self, ctxt, instance_uuid, request_id):
        self._act(ctxt, 'unrescue', instance_uuid, request_id)

    @rpc.expose(
        cast=True,
        required=_ACTION + ('image_ref',),
        types=dict(
            _ACTION_TYPES,
            image_ref=str,
            preserve_ephemeral=bool,
            power_on=bool,
        ),
    )
    def rebuild_instance(
        self,
        ctxt,
        instance_uuid,
        request_id,
        image_ref,
        preserve_ephemeral=False,
        power_on=True,
    ):
        self._act(
            ctxt,
            'rebuild',
            instance_uuid,
            request_id,
            image_ref=image_ref,
            preserve_ephemeral=preserve_ephemeral,
            power_on=power_on,
        )

    @rpc.expose(
        cast=True,
        required=_ACTION + ('admin_password',),
        types=dict(_ACTION_TYPES, admin_password=str),
    )
    def set_admin_password(
        self, ctxt, instance_uuid, request_id, admin_password
    ):
        self._act(
            ctxt,
            'changePassword',
            instance_uuid,
            request_id,
            admin_password=admin_password,
        )

    @rpc.expose(
        cast=True,
        required=_ACTION + ('image_id',),
        types=dict(_ACTION_TYPES, image_id=str),
    )
    def snapshot_instance(self, ctxt, instance_uuid, request_id, image_id):
        self._act(
            ctxt, 'createImage', instance_uuid, request_id, image_id=image_id
        )

    @rpc.expose(
        cast=True,
        required=_ACTION + ('image_id',),
        types=dict(_ACTION_TYPES, image_id=str),
    )
    def backup_instance(self, ctxt, instance_uuid, request_id, image_id):
        self._act(
            ctxt, 'createBackup', instance_uuid, request_id, image_id=image_id
        )

    @rpc.expose(cast=True, required=_ACTION, types=_ACTION_TYPES)
    def soft_delete_instance(self, ctxt, instance_uuid, request_id):
        self._act(ctxt, 'soft_delete', instance_uuid, request_id)

    @rpc.expose(cast=True, required=_ACTION, types=_ACTION_TYPES)
    def restore_instance(self, ctxt, instance_uuid, request_id):
        self._act(ctxt, 'restore', instance_uuid, request_id)

    @rpc.expose(
        required=('instance_uuid',),
        types={'instance_uuid': str, 'length': (int, type(None))},
        expected=(exception.GuestNotFound, NotImplementedError),
    )
    def get_console_output(self, ctxt, instance_uuid, length=None):
        return self.actions.console_output(instance_uuid, length)

    @rpc.expose(
        required=('instance_uuid',),
        types={'instance_uuid': str},
        expected=(exception.GuestNotFound, NotImplementedError),
    )
    def get_diagnostics(self, ctxt, instance_uuid):
        return self.actions.diagnostics(instance_uuid)

    # -- shelve and evacuate (1.4) ------------------------------------------

    @property
    def moves(self):
        moves = getattr(self, '_moves', None)
        if moves is None:
            moves = self._moves = shelve_mod.ShelveMoves(
                self.runner, self.actions
            )
        return moves

    @rpc.expose(
        cast=True,
        required=_ACTION + ('image_id',),
        types=dict(_ACTION_TYPES, image_id=str),
    )
    def shelve_instance(self, ctxt, instance_uuid, request_id, image_id):
        offload = self.runner.conf.shelved_offload_time == 0
        self._submit(
            self.moves.shelve,
            ctxt,
            instance_uuid,
            request_id,
            image_id,
            offload,
        )

    @rpc.expose(cast=True, required=_ACTION, types=_ACTION_TYPES)
    def shelve_offload_instance(self, ctxt, instance_uuid, request_id):
        self._submit(self.moves.offload, ctxt, instance_uuid, request_id)

    @rpc.expose(
        required=_ACTION,
        types=dict(
            _ACTION_TYPES,
            image_id=(str, type(None)),
            selection=(dict, type(None)),
            accel_uuids=(list, type(None)),
        ),
    )
    def unshelve_instance(
        self,
        ctxt,
        instance_uuid,
        request_id,
        image_id=None,
        selection=None,
        accel_uuids=None,
    ):
        chosen = None
        if selection is not None:
            with rpc.arriving('unshelve_instance'):
                chosen = selection_obj.Selection.from_primitive(selection)
        return self._submit(
            self.moves.unshelve,
            ctxt,
            instance_uuid,
            request_id,
            image_id,
            chosen,
            accel_uuids or [],
        ).result()

    @rpc.expose(
        required=_ACTION + ('migration', 'selection'),
        types=dict(
            _ACTION_TYPES,
            migration=dict,
            selection=dict,
            power_on=bool,
            accel_uuids=(list, type(None)),
        ),
    )
    def evacuate_instance(
        self,
        ctxt,
        instance_uuid,
        request_id,
        migration,
        selection,
        power_on=True,
        accel_uuids=None,
    ):
        with rpc.arriving('evacuate_instance', also=(ValueError,)):
            move = migration_obj.Migration.from_primitive(migration)
            chosen = selection_obj.Selection.from_primitive(selection)
        return self._submit(
            self.moves.evacuate,
            ctxt,
            instance_uuid,
            request_id,
            move,
            chosen,
            power_on,
            accel_uuids or [],
        ).result()

    # -- resize and cold migrate (1.3) ---------------------------------------
    # Alike by design: one declaration per RPC method (its message, checked
    # by rpc.expose), the step handed to ComputeResizes through _moving.

    def _moving(self, ctxt, method, request_id, migration, *more):
        if self.resizes is None:
            raise rpc.InvalidMessage('this compute takes no moves')
        with rpc.arriving():
            move = migration_obj.Migration.from_primitive(migration)
        self._submit(
            getattr(self.resizes, method), ctxt, request_id, move, *more
        )

    @rpc.expose(
        cast=True,
        required=_MOVE + ('selection',),
        types=dict(_MOVE_TYPES, selection=dict, host_list=list),
    )
    def prep_resize(
        self,
        ctxt,
        instance_uuid,
        request_id,
        migration,
        selection,
        host_list=None,
    ):
        with rpc.arriving('prep_resize'):
            chosen = selection_obj.Selection.from_primitive(selection)
            alternates = selection_obj.list_from_primitive(host_list or [])
        self._moving(
            ctxt, 'prep_resize', request_id, migration, chosen, alternates
        )

    @rpc.expose(cast=True, required=_MOVE, types=_MOVE_TYPES)
    def resize_instance(self, ctxt, instance_uuid, request_id, migration):
        self._moving(ctxt, 'resize_instance', request_id, migration)

    @rpc.expose(cast=True, required=_MOVE, types=_MOVE_TYPES)
    def finish_resize(self, ctxt, instance_uuid, request_id, migration):
        self._moving(ctxt, 'finish_resize', request_id, migration)

    @rpc.expose(cast=True, required=_MOVE, types=_MOVE_TYPES)
    def confirm_resize(self, ctxt, instance_uuid, request_id, migration):
        self._moving(ctxt, 'confirm_resize', request_id, migration)

    @rpc.expose(cast=True, required=_MOVE, types=_MOVE_TYPES)
    def revert_resize(self, ctxt, instance_uuid, request_id, migration):
        self._moving(ctxt, 'revert_resize', request_id, migration)

    @rpc.expose(cast=True, required=_MOVE, types=_MOVE_TYPES)
    def finish_revert_resize(self, ctxt, instance_uuid, request_id, migration):
        self._moving(ctxt, 'finish_revert_resize', request_id, migration)

    def shutdown(self, wait=True):
        """Not an RPC method (not exposed): the service calls it."""
        if self.live is not None and wait:
            self.live.abort_all()
        if not self._shared:
            self._pool.shutdown(wait=wait, cancel_futures=not wait)
