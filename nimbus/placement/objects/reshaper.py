"""POST /reshaper: move inventories and allocations in one transaction.

Order inside the transaction: check every consumer generation and drop the
named consumers' allocations, replace each named provider's inventory
(guarded by its generation; an inventory still used by allocations that are
not being replaced is ``placement.inventory.inuse``), then write the new
allocations with full capacity checks. Any failure rolls everything back.
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
            'Unknown resource class in inventory: %s' % ', '.join(unknown))
    prepared = allocation.prepare(conn, requests)
    for rp_uuid, (generation, invs) in sorted(inventories.items()):
        try:
            rp = resource_provider.get(conn, rp_uuid)
        except exception.NotFound:
            raise exception.BadRequest(
                'Resource provider %s in inventories not found.' % rp_uuid,
                error_code=exception.PROVIDER_NOT_FOUND)
        inventory.set_all(conn, rp, generation, invs, rc_ids=rc_ids)
    allocation.apply(conn, requests, prepared)
