"""The conductors' RPC endpoints of moving a server (unshelve, evacuate,
cold migrate and resize; the cell's move steps and the reads of its
migrations): mixins of
:class:`~nimbus.conductor.manager.SuperConductorManager` and
:class:`~nimbus.conductor.manager.CellConductorManager`, thin as the rest;
the work is :mod:`nimbus.conductor.resize`, the super conductor's
``moves`` (:mod:`nimbus.conductor.shelve`) and
:mod:`nimbus.conductor.cell_moves`.

The endpoints look alike, and that is by design: each declares one RPC
method's message (its required arguments and their types, checked by
:func:`nimbus.common.rpc.expose` before the method runs) and hands the
work to the module that owns it. Folding them into one generic endpoint
would hide which messages a conductor accepts.
"""

from oslo_utils import uuidutils

from nimbus.common import instance_states as states
from nimbus.common import rpc
from nimbus.common.objects import base as objects_base
from nimbus.conductor import cell_moves
from nimbus.conductor import resize

_OPTIONAL_STR = (str, type(None))


class SuperMoveEndpoints:
    """Casts: the work runs on the manager's pool (``_run``/``_submit``)."""

    @rpc.expose(
        cast=True,
        required=('instance_uuid', 'request_id'),
        types={
            'instance_uuid': str,
            'request_id': str,
            'availability_zone': _OPTIONAL_STR,
            'host': _OPTIONAL_STR,
            'unpin': bool,
        },
    )
    def unshelve_instance(
        self,
        ctxt,
        instance_uuid,
        request_id,
        availability_zone=None,
        host=None,
        unpin=False,
    ):
        self._run(
            'unshelve',
            self.conductor.moves.unshelve,
            ctxt,
            instance_uuid,
            request_id,
            availability_zone,
            host,
            unpin,
        )

    @rpc.expose(
        cast=True,
        required=('instance_uuid', 'request_id', 'migration_uuid'),
        types={
            'instance_uuid': str,
            'request_id': str,
            'migration_uuid': str,
            'power_on': bool,
        },
    )
    def evacuate_instance(
        self, ctxt, instance_uuid, request_id, migration_uuid, power_on=True
    ):
        self._run(
            'evacuate',
            self.conductor.moves.evacuate,
            ctxt,
            instance_uuid,
            request_id,
            migration_uuid,
            power_on,
        )

    @rpc.expose(
        cast=True,
        required=('instance_uuid', 'cell_uuid', 'request_id'),
        types={
            'instance_uuid': str,
            'cell_uuid': str,
            'request_id': str,
            'flavor': (dict, type(None)),
            'host': _OPTIONAL_STR,
            'cross_cell': bool,
        },
    )
    def migrate_server(
        self,
        ctxt,
        instance_uuid,
        cell_uuid,
        request_id,
        flavor=None,
        host=None,
        cross_cell=False,
    ):
        if flavor is not None and not isinstance(flavor.get('flavorid'), str):
            raise rpc.InvalidMessage('migrate_server: flavor needs flavorid')

        self._submit(
            ctxt,
            lambda: resize.migrate_server(
                self.conductor,
                ctxt,
                instance_uuid,
                cell_uuid,
                flavor,
                host,
                request_id,
                cross_cell=cross_cell,
            ),
            'migrate_server failed for %s',
            instance_uuid,
        )


class CellMoveEndpoints:
    @rpc.expose(
        required=(
            'instance_uuid',
            'migration_uuid',
            'expected_statuses',
            'status',
            'expected_vm_states',
            'expected_task_states',
            'updates',
        ),
        types={
            'instance_uuid': str,
            'migration_uuid': str,
            'expected_statuses': list,
            'status': str,
            'expected_vm_states': list,
            'expected_task_states': list,
            'updates': dict,
            'migration_updates': (dict, type(None)),
        },
    )
    def move_step(
        self,
        ctxt,
        instance_uuid,
        migration_uuid,
        expected_statuses,
        status,
        expected_vm_states,
        expected_task_states,
        updates,
        migration_updates=None,
    ):
        bad = [s for s in expected_vm_states if s not in states.VM_STATES]
        bad += [t for t in expected_task_states if t not in states.TASK_STATES]
        if bad or updates.get('task_state', None) not in states.TASK_STATES:
            raise rpc.InvalidMessage('move_step: unknown state(s) %s' % bad)
        try:
            done = cell_moves.move_step(
                self.conductor.db,
                instance_uuid,
                migration_uuid,
                expected_statuses,
                status,
                expected_vm_states,
                expected_task_states,
                updates,
                migration_updates,
            )
        except (
            ValueError,
            KeyError,
            TypeError,
            objects_base.MalformedPrimitive,
        ) as exc:
            raise rpc.InvalidMessage('move_step: %s' % exc) from exc
        if done is None:
            return None
        return {
            'instance': done[0].to_primitive(),
            'migration': done[1].to_primitive(),
        }

    @rpc.expose(
        required=('host', 'seconds'), types={'host': str, 'seconds': int}
    )
    def unconfirmed_resizes(self, ctxt, host, seconds):
        if seconds <= 0:
            raise rpc.InvalidMessage(
                'unconfirmed_resizes: seconds must be > 0'
            )
        return [
            m.to_primitive()
            for m in cell_moves.take_unconfirmed(
                self.conductor.db,
                host,
                seconds,
                lambda _uuid: 'req-' + uuidutils.generate_uuid(),
            )
        ]

    @rpc.expose(required=('host',), types={'host': str})
    def moves_of_host(self, ctxt, host):
        return [
            {
                'instance': None if i is None else i.to_primitive(),
                'migration': m.to_primitive(),
            }
            for i, m in cell_moves.moves_of_host(self.conductor.db, host)
        ]

    @rpc.expose(required=('host',), types={'host': str})
    def evacuations_done(self, ctxt, host):
        return [
            m.to_primitive()
            for m in self.conductor.evacuations_done(ctxt, host)
        ]

    @rpc.expose(
        required=('migration_uuid', 'status', 'expected'),
        types={'migration_uuid': str, 'status': str, 'expected': list},
    )
    def migration_set_status(self, ctxt, migration_uuid, status, expected):
        try:
            return self.conductor.migration_set_status(
                ctxt, migration_uuid, status, expected
            )
        except ValueError as exc:
            raise rpc.InvalidMessage('migration_set_status: %s' % exc) from exc
