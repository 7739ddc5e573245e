"""The conductors' RPC endpoints of a live migration (conductor RPC 1.8):
mixins of :class:`~nimbus.conductor.manager.SuperConductorManager` and
:class:`~nimbus.conductor.manager.CellConductorManager`, thin as the rest;
the work is :mod:`nimbus.conductor.live_migrate` and
:func:`nimbus.conductor.cell_moves.live_migrations_from`.

These endpoints repeat the shape of the conductors' others (a message
declared, checked, then handed on), and that is by design: each endpoint
declares one RPC method's arguments and types and hands the work to the
domain module that owns it, so what a conductor accepts can be read
here and the work is tested without a bus. A generic dispatcher would
hide the message each method takes."""

from nimbus.common import rpc
from nimbus.conductor import cell_moves
from nimbus.conductor import live_migrate

_OPTIONAL_STR = (str, type(None))


class SuperLiveEndpoints:
    @rpc.expose(
        cast=True,
        required=(
            'instance_uuid',
            'cell_uuid',
            'request_id',
            'migration_uuid',
        ),
        types={
            'instance_uuid': str,
            'cell_uuid': str,
            'request_id': str,
            'migration_uuid': str,
            'block_migration': (bool, str, type(None)),
            'disk_over_commit': (bool, type(None)),
            'host': _OPTIONAL_STR,
        },
    )
    def live_migrate_instance(
        self,
        ctxt,
        instance_uuid,
        cell_uuid,
        request_id,
        migration_uuid,
        block_migration=None,
        disk_over_commit=None,
        host=None,
    ):
        if isinstance(block_migration, str) and block_migration != 'auto':
            raise rpc.InvalidMessage(
                'live_migrate_instance: block_migration must be a bool or '
                '"auto"'
            )
        self._run(
            'live_migrate_instance',
            lambda ctxt, *args: live_migrate.live_migrate(
                self.conductor, ctxt, *args
            ),
            ctxt,
            instance_uuid,
            cell_uuid,
            request_id,
            migration_uuid,
            block_migration,
            disk_over_commit,
            host,
        )


class CellLiveEndpoints:
    @rpc.expose(required=('host',), types={'host': str})
    def live_migrations_from(self, ctxt, host):
        return [
            m.to_primitive()
            for m in cell_moves.live_migrations_from(self.conductor.db, host)
        ]
