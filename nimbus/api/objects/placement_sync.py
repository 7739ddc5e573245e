"""What the compute API mirrors into placement about a host.

The API database is the record of aggregates and service state; placement
needs two facts from it to answer the scheduler's query:

- aggregate membership, so ``member_of`` (availability zones, tenant
  isolation) finds the host's provider;
- a disabled compute service, as the ``COMPUTE_STATUS_DISABLED`` trait on
  the host's provider, so the scheduler's ``!COMPUTE_STATUS_DISABLED``
  request filter keeps placement from proposing it at all.

Placement trouble is logged, not raised: the API's own write stands, and
the scheduler's ComputeFilter still reads the service record.
"""

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

DISABLED_TRAIT = 'COMPUTE_STATUS_DISABLED'


def _provider(placement, ctxt, host):
    provider = placement.find_provider_by_name(ctxt, host)
    if provider is None:
        LOG.warning('No resource provider named %s in placement', host)
    return provider


def _mirror(placement, ctxt, host, change, what):
    """``change(provider)`` on the host's provider, when there is a
    placement and the provider; trouble is logged as failing ``what``."""
    if placement is None:
        return
    try:
        provider = _provider(placement, ctxt, host)
        if provider is not None:
            change(provider)
    except Exception:
        LOG.exception('Could not mirror %s to placement', what)


def mirror_aggregate(placement, ctxt, host, agg_uuid, add):
    """Put the host's provider in (or out of) placement aggregate
    ``agg_uuid``."""

    def change(provider):
        current = (
            placement.request(
                ctxt,
                'GET',
                '/resource_providers/%s/aggregates' % provider['uuid'],
            )
            .json()
            .get('aggregates', [])
        )
        wanted = (
            set(current) | {agg_uuid} if add else set(current) - {agg_uuid}
        )
        if wanted != set(current):
            placement.set_aggregates(ctxt, provider['uuid'], sorted(wanted))

    _mirror(
        placement,
        ctxt,
        host,
        change,
        'aggregate %s of host %s' % (agg_uuid, host),
    )


def mirror_disabled(placement, ctxt, host, disabled):
    """Set or clear COMPUTE_STATUS_DISABLED on the host's provider."""
    change = {'add' if disabled else 'remove': [DISABLED_TRAIT]}
    _mirror(
        placement,
        ctxt,
        host,
        lambda provider: placement.update_traits(
            ctxt, provider['uuid'], **change
        ),
        'the service state of %s' % host,
    )
