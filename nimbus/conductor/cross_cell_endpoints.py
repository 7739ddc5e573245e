"""The super conductor's RPC endpoints of the end of a cross-cell move
(conductor RPC 1.11; 1.12: the confirm as a call): a mixin of
:class:`~nimbus.conductor.manager.SuperConductorManager`, thin as the
rest; the work is :mod:`nimbus.conductor.cross_cell_end`.

The endpoints look alike by design: each declares one RPC method's
message (the four ids ending a cross-cell move, checked by
``rpc.expose``) and hands the work to the module that owns it. The
method names and versions the API sends live only in
:mod:`nimbus.conductor.rpcapi_moves`."""

from nimbus.common import rpc
from nimbus.conductor import cross_cell_end

_END = ('instance_uuid', 'cell_uuid', 'request_id', 'migration_uuid')
_END_TYPES = dict.fromkeys(_END, str)


class SuperCrossCellEndpoints:
    @rpc.expose(cast=True, required=_END, types=dict(_END_TYPES, wait=bool))
    def confirm_cross_cell_resize(
        self,
        ctxt,
        instance_uuid,
        cell_uuid,
        request_id,
        migration_uuid,
        wait=False,
    ):
        if wait:
            # 1.12, a call: the API deletes the server once this answers.
            cross_cell_end.confirm(
                self.conductor,
                ctxt,
                instance_uuid,
                cell_uuid,
                request_id,
                migration_uuid,
            )
            return True
        self._run(
            'confirm_cross_cell_resize',
            lambda ctxt, *args: cross_cell_end.confirm(
                self.conductor, ctxt, *args
            ),
            ctxt,
            instance_uuid,
            cell_uuid,
            request_id,
            migration_uuid,
        )

    @rpc.expose(cast=True, required=_END, types=_END_TYPES)
    def revert_cross_cell_resize(
        self, ctxt, instance_uuid, cell_uuid, request_id, migration_uuid
    ):
        self._run(
            'revert_cross_cell_resize',
            lambda ctxt, *args: cross_cell_end.revert(
                self.conductor, ctxt, *args
            ),
            ctxt,
            instance_uuid,
            cell_uuid,
            request_id,
            migration_uuid,
        )
