"""The conductors' RPC calls of the moves (issue 24): resize and cold
migrate (conductor RPC 1.6), shelve and evacuate (1.7), live migration
(1.8), the confirm and revert of a cross-cell move (1.11). Mixins of
:class:`~nimbus.conductor.rpcapi.SuperConductorAPI` and
:class:`~nimbus.conductor.rpcapi.CellConductorAPI`, which hold the
client (``self._client``) and the version history; kept in a module of
their own so that each stays one noun.

The methods look alike (prepare a version, cast or call a named method
with keyword arguments), and that is by design: the rpcapi modules are
the only place that knows the conductors' RPC method names and which
version each argument arrived in, so every method spells its own name,
version and fallback for an older conductor; a table-driven client would
scatter that knowledge into data that no reader checks against the
version history."""

from nimbus.common.objects import Instance
from nimbus.common.objects import migration as migration_obj
from nimbus.conductor import rpc_retry


class SuperMoveCalls:
    """The super conductor's casts that start a move."""

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
        """Cast (1.6): resize the instance to ``flavor`` (a flavor dict as
        the instance carries it) or, without one, cold migrate it;
        ``host``: the destination asked for (still filtered).
        ``cross_cell`` (1.9): the scheduler may choose a host of another
        cell (``compute:servers:resize:cross_cell``); a conductor older
        than 1.9 is not told, and keeps the move in its cell."""
        extra = {}
        version = '1.6'
        if cross_cell and self._client.can_send_version('1.9'):
            extra, version = {'cross_cell': True}, '1.9'
        self._client.prepare(version=version).cast(
            ctxt,
            'migrate_server',
            instance_uuid=instance_uuid,
            cell_uuid=cell_uuid,
            request_id=request_id,
            flavor=flavor,
            host=host,
            **extra,
        )

    def takes_cross_cell_ends(self):
        """Whether the super conductor reads confirm_cross_cell_resize and
        revert_cross_cell_resize (1.11); the API answers 409 to the
        confirm or revert of a cross-cell move otherwise."""
        return self._client.can_send_version('1.11')

    def takes_cross_cell_deletes(self):
        """Whether the super conductor answers a confirm of a cross-cell
        move as a call (1.12): the API confirms such a move before it
        deletes a server in VERIFY_RESIZE."""
        return self._client.can_send_version('1.12')

    def confirm_cross_cell_resize(
        self,
        ctxt,
        instance_uuid,
        cell_uuid,
        request_id,
        migration_uuid,
        wait=False,
    ):
        """Cast (1.11): confirm the cross-cell move ``migration_uuid`` of
        the instance, now in ``cell_uuid`` (the target; the API took the
        task ``resize_confirming`` and the migration ``confirming``).
        ``wait`` (1.12): a call, answered once the confirm has ended
        (the delete of a server in VERIFY_RESIZE waits for it)."""
        kwargs = dict(
            instance_uuid=instance_uuid,
            cell_uuid=cell_uuid,
            request_id=request_id,
            migration_uuid=migration_uuid,
        )
        if wait:
            return self._client.prepare(version='1.12').call(
                ctxt, 'confirm_cross_cell_resize', wait=True, **kwargs
            )
        self._client.prepare(version='1.11').cast(
            ctxt, 'confirm_cross_cell_resize', **kwargs
        )
        return None

    def revert_cross_cell_resize(
        self, ctxt, instance_uuid, cell_uuid, request_id, migration_uuid
    ):
        """Cast (1.11): revert the cross-cell move ``migration_uuid`` of
        the instance, now in ``cell_uuid`` (the target; task
        ``resize_reverting``, migration ``reverting``): the server goes
        back to its source cell."""
        self._client.prepare(version='1.11').cast(
            ctxt,
            'revert_cross_cell_resize',
            instance_uuid=instance_uuid,
            cell_uuid=cell_uuid,
            request_id=request_id,
            migration_uuid=migration_uuid,
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
        """Cast (1.7): unshelve the instance (its task is
        ``unshelving``): start it where it is when SHELVED, else schedule
        it (in ``availability_zone``, on ``host``; ``unpin``: no zone) and
        spawn it on the chosen host."""
        self._client.prepare(version='1.7').cast(
            ctxt,
            'unshelve_instance',
            instance_uuid=instance_uuid,
            request_id=request_id,
            availability_zone=availability_zone,
            host=host,
            unpin=bool(unpin),
        )

    def evacuate_instance(
        self, ctxt, instance_uuid, request_id, migration_uuid, power_on=True
    ):
        """Cast (1.7): evacuate the instance (task ``rebuilding``) for
        its migration ``migration_uuid`` (type evacuation, accepted; the
        requested host, if any, is its ``dest_host``)."""
        self._client.prepare(version='1.7').cast(
            ctxt,
            'evacuate_instance',
            instance_uuid=instance_uuid,
            request_id=request_id,
            migration_uuid=migration_uuid,
            power_on=bool(power_on),
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
        """Cast (1.8): live migrate the instance (task ``migrating``) for
        its migration ``migration_uuid`` (type live-migration,
        ``accepted``), to ``host`` if given (still filtered);
        ``block_migration`` True, False or ``auto`` (None: auto)."""
        self._client.prepare(version='1.8').cast(
            ctxt,
            'live_migrate_instance',
            instance_uuid=instance_uuid,
            cell_uuid=cell_uuid,
            request_id=request_id,
            migration_uuid=migration_uuid,
            block_migration=block_migration,
            disk_over_commit=disk_over_commit,
            host=host,
        )


class CellMoveCalls:
    """The cell conductor's calls that step, list and finish moves."""

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
        """Call (1.6): one step of a cold move (see
        :func:`nimbus.conductor.cell_moves.move_step`): ``(Instance,
        Migration)`` after it, or None when a swap did not hold.
        ``updates`` may carry ``flavor`` and a ``fault`` besides the
        InstanceUpdate fields. A call whose reply was lost is retried
        expecting also the status and states it moves to."""
        attempts = []

        @rpc_retry.lost_reply
        def call():
            statuses = list(expected_statuses)
            vm_states = list(expected_vm_states)
            tasks = list(expected_task_states)
            if attempts:
                # Our first try may have succeeded with its reply lost.
                statuses.append(status)
                if updates.get('vm_state'):
                    vm_states.append(updates['vm_state'])
                if 'task_state' in updates:
                    tasks.append(updates['task_state'])
            attempts.append(1)
            return self._client.prepare(version='1.6').call(
                ctxt,
                'move_step',
                instance_uuid=instance_uuid,
                migration_uuid=migration_uuid,
                expected_statuses=statuses,
                status=status,
                expected_vm_states=vm_states,
                expected_task_states=tasks,
                updates=dict(updates),
                migration_updates=migration_updates or {},
            )

        answer = call()
        if answer is None:
            return None
        return (
            Instance.from_primitive(answer['instance']),
            migration_obj.Migration.from_primitive(answer['migration']),
        )

    def unconfirmed_resizes(self, ctxt, host, seconds):
        """Call (1.6): the Migrations finished on ``host`` more than
        ``seconds`` ago, each taken for its confirm (status confirming,
        an instance action confirmResize whose request id is in the
        migration's ``details['request_id']``)."""
        answer = self._client.prepare(version='1.6').call(
            ctxt, 'unconfirmed_resizes', host=host, seconds=seconds
        )
        return [migration_obj.Migration.from_primitive(m) for m in answer]

    @rpc_retry.lost_reply
    def moves_of_host(self, ctxt, host):
        """Call (1.10): the cold moves in progress with ``host`` as their
        source or destination, as ``[(Instance or None, Migration)]``."""
        answer = self._client.prepare(version='1.10').call(
            ctxt, 'moves_of_host', host=host
        )
        return [
            (
                None
                if item['instance'] is None
                else Instance.from_primitive(item['instance']),
                migration_obj.Migration.from_primitive(item['migration']),
            )
            for item in answer
        ]

    @rpc_retry.lost_reply
    def shelved_offloadable(self, ctxt, host, seconds):
        """Call (1.7): the uuids of the instances on ``host`` SHELVED
        more than ``seconds`` ago, with no task under way."""
        return self._client.prepare(version='1.7').call(
            ctxt, 'shelved_offloadable', host=host, seconds=int(seconds)
        )

    @rpc_retry.lost_reply
    def evacuations_done(self, ctxt, host):
        """Call (1.7): the evacuations away from ``host`` in status
        ``done`` (Migrations)."""
        answer = self._client.prepare(version='1.7').call(
            ctxt, 'evacuations_done', host=host
        )
        return [migration_obj.Migration.from_primitive(m) for m in answer]

    @rpc_retry.lost_reply
    def migration_set_status(self, ctxt, migration_uuid, status, expected):
        """Call (1.7): compare-and-swap the migration's status from one
        of ``expected``; True when it held (a retry also accepts
        ``status``)."""
        return self._client.prepare(version='1.7').call(
            ctxt,
            'migration_set_status',
            migration_uuid=migration_uuid,
            status=status,
            expected=list(expected) + [status],
        )

    @rpc_retry.lost_reply
    def live_migrations_from(self, ctxt, host):
        """Call (1.8): the live migrations away from ``host`` under way on
        it (queued, preparing, running), as Migrations (a source that
        restarted rolls them back)."""
        answer = self._client.prepare(version='1.8').call(
            ctxt, 'live_migrations_from', host=host
        )
        return [migration_obj.Migration.from_primitive(m) for m in answer]
