"""The compute RPC endpoints of a cross-cell resize or cold migrate
(compute RPC 1.7, Nova's snapshot-based resize names; 1.8: with a
server's accelerators): a mixin of
:class:`~nimbus.compute.manager.ComputeManager`, thin as the rest; the
guest work is :class:`nimbus.compute.cross_cell.CrossCellSteps`.

Each is a call from the super conductor (which records the states in
both cells), answered ``{'ok': bool, 'error': str, ...}``; a failure is
an answer, not an exception, so the conductor rolls the move back.

The six ``*_snapshot_based_resize_*`` endpoints repeat one another on
purpose: each declares its RPC method (the name Nova gives it, its
required arguments and their types, checked by
:func:`nimbus.common.rpc.expose`) and hands the step to
:class:`~nimbus.compute.cross_cell.CrossCellSteps` through ``_cross``;
what differs between them is only the message, which is what an
endpoint is for. The method names and versions the conductor sends live
in the compute rpcapi alone (:mod:`nimbus.compute.rpcapi_cross_cell`)."""

from nimbus.common import rpc
from nimbus.common.objects import instance as instance_obj
from nimbus.common.objects import migration as migration_obj
from nimbus.compute import cross_cell

_STEP = ('instance_uuid', 'request_id', 'migration')
_STEP_TYPES = {'instance_uuid': str, 'request_id': str, 'migration': dict}


class CrossCellEndpoints:
    @property
    def cross_cell(self):
        steps = getattr(self, '_cross_cell', None)
        if steps is None:
            if self.resizes is None:
                raise rpc.InvalidMessage('this compute takes no moves')
            steps = self._cross_cell = cross_cell.CrossCellSteps(
                self.resizes.host,
                self.resizes.driver,
                self.resizes.arqs,
                self.resizes.conductor,
            )
        return steps

    def _cross(self, ctxt, name, migration, *more):
        with rpc.arriving(name):
            move = migration_obj.Migration.from_primitive(migration)
        method = getattr(self.cross_cell, name)
        return self._submit(method, ctxt, move, *more).result()

    @rpc.expose(required=_STEP, types=_STEP_TYPES)
    def prep_snapshot_based_resize_at_dest(
        self, ctxt, instance_uuid, request_id, migration
    ):
        return self._cross(ctxt, 'prep_at_dest', migration)

    @rpc.expose(required=_STEP, types=_STEP_TYPES)
    def prep_snapshot_based_resize_at_source(
        self, ctxt, instance_uuid, request_id, migration
    ):
        return self._cross(ctxt, 'prep_at_source', migration)

    @rpc.expose(
        required=_STEP + ('instance',), types=dict(_STEP_TYPES, instance=dict)
    )
    def finish_snapshot_based_resize_at_dest(
        self, ctxt, instance_uuid, request_id, migration, instance
    ):
        with rpc.arriving('finish_snapshot_based_resize_at_dest'):
            target = instance_obj.Instance.from_primitive(instance)
        return self._cross(ctxt, 'finish_at_dest', migration, target)

    @rpc.expose(required=_STEP, types=_STEP_TYPES)
    def confirm_snapshot_based_resize_at_source(
        self, ctxt, instance_uuid, request_id, migration
    ):
        return self._cross(ctxt, 'confirm_at_source', migration)

    @rpc.expose(required=_STEP, types=_STEP_TYPES)
    def revert_snapshot_based_resize_at_dest(
        self, ctxt, instance_uuid, request_id, migration
    ):
        return self._cross(ctxt, 'revert_at_dest', migration)

    @rpc.expose(required=_STEP, types=_STEP_TYPES)
    def finish_revert_snapshot_based_resize_at_source(
        self, ctxt, instance_uuid, request_id, migration
    ):
        return self._cross(ctxt, 'finish_revert_at_source', migration)
