"""Every consumer's allocations in one read: Nimbus's own listing (no
Placement 1.39 route gives them all), for the consistency audit."""

import sqlalchemy as sa

from nimbus.placement.db import models as m


def every_consumer(conn):
    """``{consumer_uuid: {rp_uuid: {rc: used}}}`` of every allocation."""
    rows = conn.execute(
        sa.select(
            m.ALLOC.c.consumer_id, m.RP.c.uuid, m.RC.c.name, m.ALLOC.c.used
        )
        .select_from(
            m.ALLOC.join(
                m.RP, m.RP.c.id == m.ALLOC.c.resource_provider_id
            ).join(m.RC, m.RC.c.id == m.ALLOC.c.resource_class_id)
        )
        .order_by(m.ALLOC.c.consumer_id)
    )
    out = {}
    for consumer, rp_uuid, rc, used in rows:
        out.setdefault(consumer, {}).setdefault(rp_uuid, {})[rc] = used
    return out
