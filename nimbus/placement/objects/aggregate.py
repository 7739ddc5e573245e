"""Provider aggregate membership (aggregates are just uuids here)."""

from nimbus.placement.db import models as m
from nimbus.placement.objects import base
from nimbus.placement.objects import statements


_PROVIDER_AGGREGATES = base.members_query(m.RPA.c.aggregate_uuid)
_INSERT = statements.fast(m.RPA.insert())
# For resource_provider.get_ref_with: a provider's aggregate uuids.
PROVIDER_AGGREGATE_COLUMNS = (m.RPA.c.aggregate_uuid,)


def provider_aggregates(conn, rp_id):
    return sorted(
        r[0] for r in conn.execute(_PROVIDER_AGGREGATES, {'b_rp': rp_id})
    )


def set_provider_aggregates(
    conn, rp_id, generation, aggregates, increment=True, have=None
):
    """Replace a provider's aggregates. Generation-guarded from 1.19.

    Returns the new generation; the provider's aggregates are then
    ``sorted(set(aggregates))``. ``have``: the provider's current
    aggregates when the caller read them with the provider (only used
    with ``increment``, where the generation guards them)."""
    new_gen = generation
    if increment:
        # Read before the generation compare-and-swap: if that succeeds,
        # no one changed the aggregates in between (every change moves it).
        have = set(provider_aggregates(conn, rp_id) if have is None else have)
        new_gen = base.increment_generation(conn, rp_id, generation)
    else:
        base.take_counter_lock(conn)
        have = set(provider_aggregates(conn, rp_id))
    base.replace_members(
        conn, _INSERT, m.RPA.c.aggregate_uuid, rp_id, have, set(aggregates)
    )
    return new_gen
