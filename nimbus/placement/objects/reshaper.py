"""POST /reshaper: move inventories and allocations in one transaction.

Order inside the transaction: check every consumer generation and drop the
named consumers' allocations, replace each named provider's inventory
(guarded by its generation; an inventory still used by allocations that are
not being replaced is ``placement.inventory.inuse``), then write the new
allocations with full capacity checks. Generations move as in Placement 16:
+1 for every provider named in ``inventories``, +1 more when its new
inventory is not empty, and the allocation write's bumps. Any failure rolls everything back.
"""

from nimbus.placement.db import models as m
from nimbus.placement import exception
from nimbus.placement.objects import allocation
from nimbus.placement.objects import base
from nimbus.placement.objects import inventory
from nimbus.placement.objects import resource_provider


def reshape(conn, inventories, requests):
    """``inventories``: ``{rp_uuid: (generation, {rc: inv})}``;
    ``requests``: a list of :class:`allocation.Request`."""
    rc_names = {rc for _g, invs in inventories.values() for rc in invs}
    rc_ids = base.name_ids(conn, m.RC, rc_names)
    unknown = sorted(rc_names - set(rc_ids))
    if unknown:
        raise exception.BadRequest(
            'Unknown resource class in inventory: %s' % ', '.join(unknown)
        )
    prepared = allocation.prepare(conn, requests)
    for rp_uuid, (generation, invs) in sorted(inventories.items()):
        try:
            rp = resource_provider.get(conn, rp_uuid)
        except exception.NotFound as exc:
            raise exception.BadRequest(
                'Resource provider %s in inventories not found.' % rp_uuid,
                error_code=exception.PROVIDER_NOT_FOUND,
            ) from exc
        new_gen = inventory.set_all(conn, rp, generation, invs, rc_ids=rc_ids)
        if invs:
            # Placement 16 writes a non-empty inventory twice (an interim
            # union of old and new classes before the allocations, the
            # final one after), one generation each; clients carry the
            # result.
            base.increment_generation(conn, rp['id'], new_gen)
    allocation.apply(conn, requests, prepared)
