"""The move half of the placement client: what the conductors call while
an instance moves (resize, cold and live migration, evacuation).

As Nova since Queens, during a move the source host's allocation belongs
to the migration record's uuid (consumer_type ``MIGRATION``) and the
instance's consumer holds the destination's. :meth:`move_allocations`
hands one consumer's allocations to another in a single ``POST
/allocations`` (both consumers in one transaction, each with the
generation it was read at): the move's start (instance -> migration),
a revert or a failed move (migration -> instance, after the instance's
destination allocation is dropped), and nothing in between is ever seen
by placement. :class:`~nimbus.common.clients.placement.PlacementClient`
has these methods (this class is one of its bases)."""

from nimbus.common import exception

# consumer_type values (placement 1.38).
INSTANCE = 'INSTANCE'
MIGRATION = 'MIGRATION'


class MoveCalls:
    """Needs ``request``, ``_check``, ``_written``, ``_retrying_races``
    and ``get_allocations_for_consumer`` (PlacementClient has them)."""

    def move_allocations(
        self, ctxt, source_consumer, target_consumer, target_type=MIGRATION
    ):
        """Give every allocation of ``source_consumer`` to
        ``target_consumer`` (whose own allocations, if any, are replaced)
        and leave the source with none, in one transaction. True when
        something moved; False when the source held nothing (a move that
        was already made, or undone). Lost generation races are read
        again and retried; another 409 raises PlacementConflict."""
        moved = []

        def attempt(_n):
            source = self.get_allocations_for_consumer(ctxt, source_consumer)
            held = source.get('allocations') or {}
            if not held:
                return
            target = self.get_allocations_for_consumer(ctxt, target_consumer)
            body = {
                source_consumer: {
                    'allocations': {},
                    'project_id': source['project_id'],
                    'user_id': source['user_id'],
                    'consumer_generation': source['consumer_generation'],
                    'consumer_type': source.get('consumer_type') or INSTANCE,
                },
                target_consumer: {
                    'allocations': {
                        rp: {'resources': dict(a['resources'])}
                        for rp, a in held.items()
                    },
                    'project_id': source['project_id'],
                    'user_id': source['user_id'],
                    # Placement drops a consumer without allocations: its
                    # generation is null again.
                    'consumer_generation': (
                        target.get('consumer_generation')
                        if target.get('allocations')
                        else None
                    ),
                    'consumer_type': target_type,
                },
            }
            response = self.request(ctxt, 'POST', '/allocations', json=body)
            self._written(
                response,
                204,
                'moving allocations of %s to %s'
                % (source_consumer, target_consumer),
            )
            moved.append(True)

        self._retrying_races(
            attempt,
            exception.PlacementConflict(
                'Could not move the allocations of %s to %s'
                % (source_consumer, target_consumer)
            ),
        )
        return bool(moved)

    def replace_allocations(
        self,
        ctxt,
        consumer_uuid,
        allocations,
        project_id,
        user_id,
        consumer_type=INSTANCE,
    ):
        """Set a consumer's allocations to ``allocations`` ({rp_uuid:
        {rc: amount}}), read-modify-write with its generation (an empty
        dict drops them all); lost races are retried."""
        if not allocations:
            self.remove_allocations(ctxt, consumer_uuid)
            return

        def attempt(_n):
            current = self.get_allocations_for_consumer(ctxt, consumer_uuid)
            generation = (
                current.get('consumer_generation')
                if current.get('allocations')
                else None
            )
            body = {
                'allocations': {
                    rp: {'resources': dict(resources)}
                    for rp, resources in allocations.items()
                },
                'project_id': project_id,
                'user_id': user_id,
                'consumer_generation': generation,
                'consumer_type': consumer_type,
            }
            self._written(
                self.request(
                    ctxt, 'PUT', '/allocations/%s' % consumer_uuid, json=body
                ),
                204,
                'replacing allocations of %s' % consumer_uuid,
            )

        self._retrying_races(
            attempt,
            exception.PlacementConflict(
                'Could not replace the allocations of %s' % consumer_uuid
            ),
        )
