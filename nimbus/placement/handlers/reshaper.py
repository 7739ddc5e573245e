"""POST /reshaper (1.30): inventories and allocations in one transaction."""

from nimbus.placement.handlers import allocation
from nimbus.placement.handlers import inventory
from nimbus.placement.handlers import util
from nimbus.placement.objects import write_retry
from nimbus.placement.objects import reshaper as reshaper_obj
from nimbus.placement.schemas import allocation as schema


@util.since((1, 30))
def reshape(state, req, resp):
    util.authorize(state, req, 'placement:reshaper:reshape')
    version = util.version(req)
    data = util.body(req, schema.reshaper_schema(version))
    inventories = {}
    for rp_uuid, entry in data['inventories'].items():
        invs = {
            rc: inventory.check_capacity(req, rc, inv)
            for rc, inv in entry['inventories'].items()
        }
        inventories[util.normalize_uuid(rp_uuid)] = (
            entry['resource_provider_generation'],
            invs,
        )
    requests = [
        allocation.to_request(uuid, one, version)
        for uuid, one in sorted(data['allocations'].items())
    ]
    write_retry.write_retrying(
        state.pdb,
        state.allocation_conflict_retry_count,
        reshaper_obj.reshape,
        inventories,
        requests,
        structure=True,
        usage=True,
    )
    util.no_content(resp)
