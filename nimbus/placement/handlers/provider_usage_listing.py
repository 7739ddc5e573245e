"""``GET /nimbus/provider_usages``: every provider's inventories and usages
at once.

Nimbus's own route, outside Placement 1.39's (where a reader asks
``/resource_providers/{uuid}/inventories`` and ``.../usages`` for each
provider: 2000 requests at 1000 providers). Admin or service only, at
every microversion. ``nimbus hosts`` reads it; against a Placement without
it (404) the CLI walks the providers. See docs/placement.md.
"""

from nimbus.placement.handlers import util
from nimbus.placement.objects import provider_usage_listing

PATH = '/nimbus/provider_usages'


@util.json_only
def list_all(state, req, resp):
    util.authorize(state, req, 'placement:nimbus:provider_usages:list')
    providers = state.pdb.read(provider_usage_listing.every_provider)
    util.send(req, resp, {'resource_providers': providers})
