"""Scheduling a move and holding its claims, as Nova does since Queens.

Every move that goes through the scheduler (resize, cold and live
migration without a forced host, evacuation, unshelve) starts here, in
the super conductor, which reads the instance's stored request spec from
the API database:

1. :func:`move_spec` reuses the request spec stored at create: the new
   flavor swapped in for a resize, ``ignore_hosts`` holding the hosts to
   avoid (the source for a migrate), ``requested_destination`` carrying a
   chosen host (still filtered, not forced, as Nova since 2.68); the
   server group, zone, image and hints stay as they were.
2. :meth:`MoveClaims.schedule`: the source's allocation is handed to the
   migration's uuid (consumer_type MIGRATION) in one ``POST
   /allocations``; then the scheduler claims the destination for the
   instance's own consumer, exactly as for a build, and answers the
   selected host and its alternates in the same cell. A move the
   scheduler cannot place puts the allocation back before it raises.
3. :meth:`MoveClaims.undo` (a failed or reverted move) hands the
   migration's allocation back to the instance in one transaction, which
   replaces whatever the instance held on the destination;
   :meth:`MoveClaims.confirm` drops the migration's (the source's).
   Both are idempotent, so a conductor that died in the middle repeats
   them safely.

A move without a migration consumer (unshelve: the instance holds
nothing while it is offloaded) passes ``migration_uuid=None``.
"""

from oslo_log import log as logging

from nimbus.common.clients.placement_moves import INSTANCE
from nimbus.common.objects import RequestSpec
from nimbus.db import request_specs

LOG = logging.getLogger(__name__)


def stored_spec(api_db, instance_uuid):
    """The RequestSpec stored for the instance at create, or None."""
    with api_db.session() as session:
        primitive = request_specs.get(session, instance_uuid)
    return RequestSpec.from_primitive(primitive) if primitive else None


def move_spec(
    request_spec,
    instance_uuid,
    flavor=None,
    ignore_hosts=(),
    destination=None,
    availability_zone=None,
):
    """A copy of ``request_spec`` for moving one instance: see
    :meth:`RequestSpec.for_move <nimbus.common.objects.RequestSpec.for_move>`
    (there, so that the API's move dry run builds the same spec without
    importing the conductor)."""
    return request_spec.for_move(
        instance_uuid,
        flavor=flavor,
        ignore_hosts=ignore_hosts,
        destination=destination,
        availability_zone=availability_zone,
    )


class MoveClaims:
    """The placement side of a move: ``scheduler`` (a SchedulerAPI) and
    ``placement`` (a PlacementClient) are injected."""

    def __init__(self, scheduler, placement):
        self.scheduler = scheduler
        self.placement = placement

    def schedule(
        self, ctxt, spec, instance_uuid, migration_uuid, return_alternates=True
    ):
        """Claim a destination for ``spec`` (from :func:`move_spec`): the
        host list (selected first, then alternates). Raises what the
        scheduler raised (NoValidHost...) after giving the source's
        allocation back."""
        if migration_uuid is not None:
            self.placement.move_allocations(
                ctxt, instance_uuid, migration_uuid
            )
        try:
            answer = self.scheduler.select_destinations(
                ctxt, spec, [instance_uuid], return_alternates
            )
        except Exception:
            self.undo(ctxt, instance_uuid, migration_uuid)
            raise
        host_list = answer[0] if answer else []
        if not host_list:  # the scheduler answers NoValidHost; be safe
            self.undo(ctxt, instance_uuid, migration_uuid)
        return host_list

    def undo(self, ctxt, instance_uuid, migration_uuid):
        """Back to before the move: the instance holds the source's
        allocation again (its destination claim, if any, is replaced in
        the same transaction). Without a migration consumer, the
        instance's claim is dropped. Idempotent."""
        if migration_uuid is None:
            self.placement.remove_allocations(ctxt, instance_uuid)
            return
        if not self.placement.move_allocations(
            ctxt, migration_uuid, instance_uuid, target_type=INSTANCE
        ):
            LOG.debug(
                'Migration %s of %s holds nothing: nothing to give back',
                migration_uuid,
                instance_uuid,
            )

    def confirm(self, ctxt, migration_uuid):
        """The move is over and the source is free: drop the migration's
        allocation. Idempotent."""
        self.placement.remove_allocations(ctxt, migration_uuid)
