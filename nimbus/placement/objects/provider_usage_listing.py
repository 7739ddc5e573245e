"""Every provider's inventories and usages in one read: Nimbus's own
listing (Placement 1.39 answers them one provider at a time), for
``nimbus hosts``."""

import sqlalchemy as sa

from nimbus.placement.db import models as m
from nimbus.placement.objects import inventory


def every_provider(conn):
    """``[{uuid, name, parent_provider_uuid, inventories, usages}]`` sorted
    by name: three queries whatever the number of providers."""
    parent = m.RP.alias('parent')
    providers = {}
    for rp_id, uuid, name, parent_uuid in conn.execute(
        sa.select(m.RP.c.id, m.RP.c.uuid, m.RP.c.name, parent.c.uuid)
        .select_from(
            m.RP.outerjoin(parent, parent.c.id == m.RP.c.parent_provider_id)
        )
        .order_by(m.RP.c.name)
    ):
        providers[rp_id] = {
            'uuid': uuid,
            'name': name,
            'parent_provider_uuid': parent_uuid,
            'inventories': {},
            'usages': {},
        }
    for row in conn.execute(
        sa.select(
            m.INV.c.resource_provider_id,
            m.RC.c.name,
            *inventory.CAPACITY_COLUMNS,
        ).select_from(m.INV.join(m.RC, m.RC.c.id == m.INV.c.resource_class_id))
    ):
        provider = providers.get(row[0])
        if provider is None:
            continue
        provider['inventories'][row[1]] = {
            'total': row[2],
            'reserved': row[3],
            'min_unit': row[4],
            'max_unit': row[5],
            'step_size': row[6],
            'allocation_ratio': row[7],
        }
    for rp_id, rc, used in conn.execute(
        sa.select(
            m.ALLOC.c.resource_provider_id,
            m.RC.c.name,
            sa.func.sum(m.ALLOC.c.used),
        )
        .select_from(
            m.ALLOC.join(m.RC, m.RC.c.id == m.ALLOC.c.resource_class_id)
        )
        .group_by(m.ALLOC.c.resource_provider_id, m.RC.c.name)
    ):
        provider = providers.get(rp_id)
        if provider is not None:
            provider['usages'][rc] = int(used)
    # Placement's usages list every class of the inventory, 0 when unused.
    for provider in providers.values():
        for rc in provider['inventories']:
            provider['usages'].setdefault(rc, 0)
    return list(providers.values())
