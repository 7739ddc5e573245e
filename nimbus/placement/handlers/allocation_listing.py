"""``GET /nimbus/allocations``: every consumer's allocations at once.

Nimbus's own route, outside Placement 1.39's (which has no listing of all
allocations: a reader walks ``GET /resource_providers/{uuid}/allocations``
provider by provider). Admin or service only, at every microversion. The
consistency audit reads it; against a Placement without it (404) the audit
walks the providers. See docs/placement.md.
"""

from nimbus.placement.handlers import util
from nimbus.placement.objects import allocation_listing

PATH = '/nimbus/allocations'


@util.json_only
def list_all(state, req, resp):
    util.authorize(state, req, 'placement:nimbus:allocations:list')
    consumers = state.pdb.read(allocation_listing.every_consumer)
    util.send(
        req,
        resp,
        {
            'consumers': {
                consumer: {
                    'allocations': {
                        rp: {'resources': resources}
                        for rp, resources in providers.items()
                    }
                }
                for consumer, providers in consumers.items()
            }
        },
    )
