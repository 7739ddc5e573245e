"""The compute RPC calls of a cross-cell resize or cold migrate (compute
RPC 1.7, Nova's snapshot-based resize names; 1.8 for a move with
accelerators): a mixin of
:class:`~nimbus.compute.rpcapi.ComputeAPI`, which holds the clients
(``self._client(host)``) and the version history.

Only the super conductor sends them, on the bus of the cell of ``host``
(the source's or the destination's), and waits for each answer
``{'ok': bool, 'error': str, ...}`` before it records the next state
(:mod:`nimbus.conductor.cross_cell_resize`)."""

from nimbus.compute import move_arqs

_VERSION = '1.7'
# A move with a device profile or ARQs: the destination binds and awaits
# ARQs in its prep and spawns with them (what a 1.7 compute would skip).
_ARQ_VERSION = '1.8'


def _version(migration):
    if (
        move_arqs.profile_of(migration.new_flavor)
        or move_arqs.source_arqs(migration)
        or move_arqs.dest_arqs(migration)
    ):
        return _ARQ_VERSION
    return _VERSION


class CrossCellCalls:
    def takes_cross_cell_moves(self):
        """Whether the computes may be sent these calls (1.7); a
        ``[upgrade_levels] compute`` cap below keeps moves in their
        cell."""
        return self._takes((1, 7))

    def takes_cross_cell_arqs(self):
        """Whether a server with accelerators may be carried across
        cells (1.8: the destination binds and awaits its ARQs)."""
        return self._takes((1, 8))

    def prep_snapshot_based_resize_at_dest(
        self, ctxt, host, request_id, migration, timeout=None
    ):
        """Call: can ``host`` (the destination) take the guest with the
        migration's new flavor?"""
        return self._call(
            ctxt,
            host,
            'prep_snapshot_based_resize_at_dest',
            request_id,
            migration,
            timeout,
        )

    def prep_snapshot_based_resize_at_source(
        self, ctxt, host, request_id, migration, timeout=None
    ):
        """Call: the source ``host`` powers the guest off for the move."""
        return self._call(
            ctxt,
            host,
            'prep_snapshot_based_resize_at_source',
            request_id,
            migration,
            timeout,
        )

    def finish_snapshot_based_resize_at_dest(
        self, ctxt, host, request_id, migration, instance, timeout=None
    ):
        """Call: the destination spawns the guest of ``instance`` (an
        Instance, the target cell's copy) with the new flavor;
        ``power_state`` in the answer."""
        return self._call(
            ctxt,
            host,
            'finish_snapshot_based_resize_at_dest',
            request_id,
            migration,
            timeout,
            instance=instance.to_primitive(),
        )

    def confirm_snapshot_based_resize_at_source(
        self, ctxt, host, request_id, migration, timeout=None
    ):
        """Call: the source drops the old guest."""
        return self._call(
            ctxt,
            host,
            'confirm_snapshot_based_resize_at_source',
            request_id,
            migration,
            timeout,
        )

    def revert_snapshot_based_resize_at_dest(
        self, ctxt, host, request_id, migration, timeout=None
    ):
        """Call: the destination drops the new guest."""
        return self._call(
            ctxt,
            host,
            'revert_snapshot_based_resize_at_dest',
            request_id,
            migration,
            timeout,
        )

    def finish_revert_snapshot_based_resize_at_source(
        self, ctxt, host, request_id, migration, timeout=None
    ):
        """Call: the source powers the old guest on again (a stopped
        server stays off); ``power_state`` in the answer."""
        return self._call(
            ctxt,
            host,
            'finish_revert_snapshot_based_resize_at_source',
            request_id,
            migration,
            timeout,
        )

    def _call(
        self, ctxt, host, method, request_id, migration, timeout, **more
    ):
        return (
            self._client(host)
            .prepare(version=_version(migration), timeout=timeout)
            .call(
                ctxt,
                method,
                instance_uuid=migration.instance_uuid,
                request_id=request_id,
                migration=migration.to_primitive(),
                **more,
            )
        )
