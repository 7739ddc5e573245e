"""The compute RPC calls of a live migration (compute RPC 1.5): a mixin
of :class:`~nimbus.compute.rpcapi.ComputeAPI`, which holds the clients
(``self._client(host)``) and the version history; kept in a module of
its own so that each stays one noun.

Every message carries the request id of the instance action
(``live-migration``, or ``live_migration_cancel`` /
``live_migration_force_complete``) and, but for the abort and the force
complete, the Migration (type ``live-migration``). The calls answer
``{'ok': bool, 'error': str, ...}`` rather than raising, so that the
caller decides what a refusal means (retry another host, roll back).
The methods look alike by design: the rpcapi is the only place that
names the compute's RPC methods and their arguments, one method each.
"""

_VERSION = '1.5'


class LiveMigrationCalls:
    def _live(self, host, timeout=None):
        return self._client(host).prepare(version=_VERSION, timeout=timeout)

    def check_can_live_migrate_destination(
        self,
        ctxt,
        host,
        instance_uuid,
        request_id,
        migration,
        block_migration=None,
        disk_over_commit=None,
        timeout=None,
    ):
        """Call: can ``host`` (the destination the scheduler chose) take
        the guest? ``{'ok', 'error', 'migrate_data'}``; ``migrate_data``
        says the block migration the destination resolved (``auto``)."""
        return self._live(host, timeout).call(
            ctxt,
            'check_can_live_migrate_destination',
            instance_uuid=instance_uuid,
            request_id=request_id,
            migration=migration.to_primitive(),
            block_migration=block_migration,
            disk_over_commit=disk_over_commit,
        )

    def live_migration(
        self, ctxt, host, instance_uuid, request_id, migration, migrate_data
    ):
        """Cast: the source ``host`` prepares the destination, copies the
        guest and hands it over (or rolls back)."""
        self._live(host).cast(
            ctxt,
            'live_migration',
            instance_uuid=instance_uuid,
            request_id=request_id,
            migration=migration.to_primitive(),
            migrate_data=dict(migrate_data or {}),
        )

    def pre_live_migration(
        self,
        ctxt,
        host,
        instance_uuid,
        request_id,
        migration,
        migrate_data,
        timeout=None,
    ):
        """Call: the destination ``host`` gets ready to receive the guest;
        ``{'ok', 'error'}``."""
        return self._live(host, timeout).call(
            ctxt,
            'pre_live_migration',
            instance_uuid=instance_uuid,
            request_id=request_id,
            migration=migration.to_primitive(),
            migrate_data=dict(migrate_data or {}),
        )

    def post_live_migration_at_destination(
        self, ctxt, host, instance_uuid, request_id, migration, timeout=None
    ):
        """Call: the guest runs on the destination ``host`` now: the
        instance's host and node are swapped there; ``{'ok', 'error'}``."""
        return self._live(host, timeout).call(
            ctxt,
            'post_live_migration_at_destination',
            instance_uuid=instance_uuid,
            request_id=request_id,
            migration=migration.to_primitive(),
        )

    def rollback_live_migration_at_destination(
        self, ctxt, host, instance_uuid, request_id, migration
    ):
        """Cast: the move failed or was aborted; the destination ``host``
        drops whatever it made for the guest."""
        self._live(host).cast(
            ctxt,
            'rollback_live_migration_at_destination',
            instance_uuid=instance_uuid,
            request_id=request_id,
            migration=migration.to_primitive(),
        )

    def live_migration_abort(
        self, ctxt, host, instance_uuid, request_id, migration_uuid
    ):
        """Cast: stop the live migration ``migration_uuid`` running on the
        source ``host``; it rolls back and ends ``cancelled``."""
        self._live(host).cast(
            ctxt,
            'live_migration_abort',
            instance_uuid=instance_uuid,
            request_id=request_id,
            migration_uuid=migration_uuid,
        )

    def live_migration_force_complete(
        self, ctxt, host, instance_uuid, request_id, migration_uuid
    ):
        """Cast: finish the copy of ``migration_uuid`` at once (the source
        ``host`` pauses the guest for the last pass, as Nova's libvirt)."""
        self._live(host).cast(
            ctxt,
            'live_migration_force_complete',
            instance_uuid=instance_uuid,
            request_id=request_id,
            migration_uuid=migration_uuid,
        )
