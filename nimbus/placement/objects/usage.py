"""Usages: per provider, and per project/user grouped by consumer type."""

import sqlalchemy as sa

from nimbus.placement.db import models as m


def for_provider(conn, rp_id):
    """``{rc: used}`` for every class the provider has inventory of."""
    names = dict(
        conn.execute(
            sa.select(m.INV.c.resource_class_id, m.RC.c.name)
            .select_from(
                m.INV.join(m.RC, m.RC.c.id == m.INV.c.resource_class_id)
            )
            .where(m.INV.c.resource_provider_id == rp_id)
        ).all()
    )
    used = dict(
        conn.execute(
            sa.select(m.ALLOC.c.resource_class_id, sa.func.sum(m.ALLOC.c.used))
            .where(m.ALLOC.c.resource_provider_id == rp_id)
            .group_by(m.ALLOC.c.resource_class_id)
        ).all()
    )
    out = {name: int(used.get(rc_id, 0) or 0) for rc_id, name in names.items()}
    for rc_id, amount in used.items():
        if rc_id not in names:
            name = conn.execute(
                sa.select(m.RC.c.name).where(m.RC.c.id == rc_id)
            ).scalar()
            out[name] = int(amount)
    return out


def for_project(conn, project_id, user_id=None, consumer_type=None):
    """Rows ``(consumer_type or None, consumer uuid, rc, used)``."""
    query = (
        sa.select(
            m.CTYPE.c.name, m.CONSUMER.c.uuid, m.RC.c.name, m.ALLOC.c.used
        )
        .select_from(
            m.ALLOC.join(
                m.CONSUMER, m.CONSUMER.c.uuid == m.ALLOC.c.consumer_id
            )
            .join(m.RC, m.RC.c.id == m.ALLOC.c.resource_class_id)
            .outerjoin(m.CTYPE, m.CTYPE.c.id == m.CONSUMER.c.consumer_type_id)
        )
        .where(m.CONSUMER.c.project_id == project_id)
    )
    if user_id is not None:
        query = query.where(m.CONSUMER.c.user_id == user_id)
    if consumer_type == 'unknown':
        query = query.where(m.CONSUMER.c.consumer_type_id.is_(None))
    elif consumer_type not in (None, 'all'):
        query = query.where(m.CTYPE.c.name == consumer_type)
    # by class id, the order Placement's grouped query lists them in
    return conn.execute(query.order_by(m.ALLOC.c.resource_class_id)).all()


def summarize(rows, by_type, consumer_type=None):
    """Shape usage rows: flat ``{rc: n}`` or, from 1.38, per consumer type.

    From 1.38 the keys are consumer types (``unknown`` for consumers that
    have none); with ``consumer_type=all`` everything is summed under
    ``all``.
    """
    if not by_type:
        out = {}
        for _t, _c, rc, used in rows:
            out[rc] = out.get(rc, 0) + used
        return out
    groups = {}
    consumers = {}
    for ctype, consumer, rc, used in rows:
        key = 'all' if consumer_type == 'all' else (ctype or 'unknown')
        entry = groups.get(key)
        if entry is None:
            entry = groups[key] = {}
            consumers[key] = set()
        consumers[key].add(consumer)
        if rc not in entry:
            entry[rc] = 0
            if len(entry) == 1:
                # Placement's answer has the count right after the first
                # class (its dict is filled class by class)
                entry['consumer_count'] = 0
        entry[rc] += used
    for key, entry in groups.items():
        entry['consumer_count'] = len(consumers[key])
    return groups
