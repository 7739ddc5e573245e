"""The RPC endpoints of a live migration on nimbus-compute (compute RPC
1.5): a mixin of :class:`~nimbus.compute.manager.ComputeManager`, thin as
the rest of it; the work is :class:`nimbus.compute.live_migration.
LiveMigrations` (``self.live``), run on the manager's pool."""

from nimbus.common import rpc
from nimbus.common.objects import migration as migration_obj

_LIVE = ('instance_uuid', 'request_id', 'migration')
_LIVE_TYPES = {'instance_uuid': str, 'request_id': str, 'migration': dict}
_SIGNAL = ('instance_uuid', 'request_id', 'migration_uuid')
_SIGNAL_TYPES = {
    'instance_uuid': str,
    'request_id': str,
    'migration_uuid': str,
}


def _migration(name, primitive):
    with rpc.arriving(name, also=(ValueError,)):
        return migration_obj.Migration.from_primitive(primitive)


class LiveMigrationEndpoints:
    def _live_work(self, method, *args):
        if getattr(self, 'live', None) is None:
            raise rpc.InvalidMessage('this compute takes no live migrations')
        return self._submit(getattr(self.live, method), *args)

    @rpc.expose(
        required=_LIVE,
        types=dict(
            _LIVE_TYPES,
            block_migration=(bool, str, type(None)),
            disk_over_commit=(bool, type(None)),
        ),
    )
    def check_can_live_migrate_destination(
        self,
        ctxt,
        instance_uuid,
        request_id,
        migration,
        block_migration=None,
        disk_over_commit=None,
    ):
        move = _migration('check_can_live_migrate_destination', migration)
        return self._live_work(
            'check_can_live_migrate_destination',
            ctxt,
            request_id,
            move,
            block_migration,
            disk_over_commit,
        ).result()

    @rpc.expose(
        required=_LIVE,
        types=dict(_LIVE_TYPES, migrate_data=(dict, type(None))),
    )
    def pre_live_migration(
        self, ctxt, instance_uuid, request_id, migration, migrate_data=None
    ):
        move = _migration('pre_live_migration', migration)
        return self._live_work(
            'pre_live_migration', ctxt, request_id, move, migrate_data or {}
        ).result()

    @rpc.expose(required=_LIVE, types=_LIVE_TYPES)
    def post_live_migration_at_destination(
        self, ctxt, instance_uuid, request_id, migration
    ):
        move = _migration('post_live_migration_at_destination', migration)
        return self._live_work(
            'post_live_migration_at_destination', ctxt, request_id, move
        ).result()

    @rpc.expose(cast=True, required=_LIVE, types=_LIVE_TYPES)
    def rollback_live_migration_at_destination(
        self, ctxt, instance_uuid, request_id, migration
    ):
        move = _migration('rollback_live_migration_at_destination', migration)
        self._live_work('rollback_at_destination', ctxt, request_id, move)

    @rpc.expose(
        cast=True,
        required=_LIVE,
        types=dict(_LIVE_TYPES, migrate_data=(dict, type(None))),
    )
    def live_migration(
        self, ctxt, instance_uuid, request_id, migration, migrate_data=None
    ):
        move = _migration('live_migration', migration)
        self._live_work(
            'live_migration', ctxt, request_id, move, migrate_data or {}
        )

    @rpc.expose(cast=True, required=_SIGNAL, types=_SIGNAL_TYPES)
    def live_migration_abort(
        self, ctxt, instance_uuid, request_id, migration_uuid
    ):
        self._live_work(
            'abort', ctxt, instance_uuid, request_id, migration_uuid
        )

    @rpc.expose(cast=True, required=_SIGNAL, types=_SIGNAL_TYPES)
    def live_migration_force_complete(
        self, ctxt, instance_uuid, request_id, migration_uuid
    ):
        self._live_work(
            'force_complete', ctxt, instance_uuid, request_id, migration_uuid
        )
