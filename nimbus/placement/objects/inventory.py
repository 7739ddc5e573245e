"""Provider inventories, guarded by the provider generation.

Capacity is ``int((total - reserved) * allocation_ratio)``. Removing an
inventory that has allocations is refused with
``placement.inventory.inuse``; shrinking an inventory below its usage is
allowed (the provider is then over capacity until allocations go away),
as in OpenStack Placement, and logged.
"""

from oslo_log import log as logging
import sqlalchemy as sa

from nimbus.placement.db import models as m
from nimbus.placement import exception
from nimbus.placement.objects import base
from nimbus.placement.objects import statements

LOG = logging.getLogger(__name__)

# The fields a client reports too (nimbus.common.clients.placement.
# INVENTORY_FIELDS); Placement imports no client, so it keeps its own.
FIELDS = (
    'total',
    'reserved',
    'min_unit',
    'max_unit',
    'step_size',
    'allocation_ratio',
)
# An inventory row's capacity columns, in FIELDS' order: what every reader
# of capacity (allocation checks, usage listings, the snapshot) selects.
CAPACITY_COLUMNS = tuple(m.INV.c[f] for f in FIELDS)
DEFAULTS = {
    'reserved': 0,
    'min_unit': 1,
    'max_unit': 2147483647,
    'step_size': 1,
    'allocation_ratio': 1.0,
}


def with_defaults(inv):
    out = dict(DEFAULTS)
    out.update({k: v for k, v in inv.items() if k in FIELDS})
    return out


def normalized(inventories):
    """``{rc: inv}`` as :func:`get_all` would read it back after writing
    ``inventories``: every field present, integers and a float ratio."""
    out = {}
    for rc, inv in inventories.items():
        inv = with_defaults(inv)
        out[rc] = {
            f: (float(inv[f]) if f == 'allocation_ratio' else int(inv[f]))
            for f in FIELDS
        }
    return out


# Built once (see objects.base).
_GET_ALL = statements.fast(
    sa.select(m.RC.c.name, *[m.INV.c[f] for f in FIELDS])
    .select_from(m.INV.join(m.RC, m.RC.c.id == m.INV.c.resource_class_id))
    .where(m.INV.c.resource_provider_id == sa.bindparam('b_rp'))
)
_EXISTING = statements.fast(
    sa.select(m.INV.c.resource_class_id, *CAPACITY_COLUMNS).where(
        m.INV.c.resource_provider_id == sa.bindparam('b_rp')
    )
)
_INSERT = statements.fast(m.INV.insert())


def get_all(conn, rp_id):
    """``{rc_name: {field: value}}`` of one provider."""
    rows = conn.execute(_GET_ALL, {'b_rp': rp_id}).all()
    return {r[0]: dict(zip(FIELDS, r[1:], strict=False)) for r in rows}


def _used_classes(conn, rp_id, rc_ids):
    if not rc_ids:
        return set()
    return {
        r[0]
        for r in conn.execute(
            sa.select(m.ALLOC.c.resource_class_id)
            .distinct()
            .where(m.ALLOC.c.resource_provider_id == rp_id)
            .where(m.ALLOC.c.resource_class_id.in_(list(rc_ids)))
        )
    }


def _rc_ids(conn, names):
    ids = base.name_ids(conn, m.RC, names)
    missing = sorted(set(names) - set(ids))
    if missing:
        raise exception.BadRequest(
            'Unknown resource class in inventory: %s' % ', '.join(missing)
        )
    return ids


# The columns of a provider's current inventory rows (what _EXISTING
# reads), for resource_provider.get_ref_with.
EXISTING_COLUMNS = (m.INV.c.resource_class_id, *CAPACITY_COLUMNS)
# Only which classes it has, for the same (see set_all's ``classes``).
CLASS_COLUMNS = (m.INV.c.resource_class_id,)


def set_all(
    conn, rp, generation, inventories, rc_ids=None, existing=None, classes=None
):
    """Replace the whole inventory of provider ``rp`` (a row mapping).

    Returns the new generation. ``rc_ids`` may be passed when the caller
    already resolved the names (the reshaper does); ``existing``, the
    provider's current rows (:data:`EXISTING_COLUMNS`) when the caller read
    them with the provider; or ``classes``, the resource class ids of those
    rows (:data:`CLASS_COLUMNS`): their values are then read only when a
    class is kept (a new provider's first inventory reads none; the
    values of a class that goes away are not needed).
    """
    ids = rc_ids if rc_ids is not None else _rc_ids(conn, inventories)
    rp_id = rp['id']
    want = {ids[name]: with_defaults(inv) for name, inv in inventories.items()}
    if (
        existing is None
        and classes is not None
        and want.keys().isdisjoint(classes)
    ):
        existing = {rc_id: None for rc_id in classes}
    else:
        if existing is None:
            existing = conn.execute(_EXISTING, {'b_rp': rp_id}).all()
        existing = {r[0]: tuple(r[1:]) for r in existing}
    removed = set(existing) - set(want)
    new_gen = base.increment_generation(conn, rp_id, generation)
    in_use = _used_classes(conn, rp_id, removed)
    if in_use:
        names = dict(
            conn.execute(
                sa.select(m.RC.c.id, m.RC.c.name).where(m.RC.c.id.in_(in_use))
            ).all()
        )
        raise exception.InventoryInUse(
            rcs=', '.join(sorted(names.values())), uuid=rp['uuid']
        )
    if removed:
        conn.execute(
            m.INV.delete()
            .where(m.INV.c.resource_provider_id == rp_id)
            .where(m.INV.c.resource_class_id.in_(removed))
        )
    now = base.utcnow()
    inserts = []
    for rc_id, inv in want.items():
        old = existing.get(rc_id)
        if old is None:
            inserts.append(
                dict(
                    inv,
                    resource_provider_id=rp_id,
                    resource_class_id=rc_id,
                    created_at=now,
                    updated_at=now,
                )
            )
        elif tuple(old) != tuple(inv[f] for f in FIELDS):
            conn.execute(
                m.INV.update()
                .where(m.INV.c.resource_provider_id == rp_id)
                .where(m.INV.c.resource_class_id == rc_id)
                .values(updated_at=now, **inv)
            )
    if inserts:
        conn.execute(_INSERT, inserts)
    _warn_over_capacity(conn, rp, want, existing)
    return new_gen


def _warn_over_capacity(conn, rp, want, existing):
    shrunk = [rc for rc, inv in want.items() if rc in existing]
    if not shrunk:
        return
    used = dict(
        conn.execute(
            sa.select(m.ALLOC.c.resource_class_id, sa.func.sum(m.ALLOC.c.used))
            .where(m.ALLOC.c.resource_provider_id == rp['id'])
            .where(m.ALLOC.c.resource_class_id.in_(shrunk))
            .group_by(m.ALLOC.c.resource_class_id)
        ).all()
    )
    for rc_id, amount in used.items():
        inv = want[rc_id]
        cap = int((inv['total'] - inv['reserved']) * inv['allocation_ratio'])
        if amount > cap:
            LOG.warning(
                'Resource provider %s is now over capacity for '
                'resource class id %s: %s used, capacity %s',
                rp['uuid'],
                rc_id,
                amount,
                cap,
            )


def replace_all(conn, rp, generation, inventories, classes=None):
    """:func:`set_all` (``classes`` as there), returning ``(generation,
    inventories)`` like the single-class functions below."""
    return (
        set_all(conn, rp, generation, inventories, classes=classes),
        normalized(inventories),
    )


def add_one(conn, rp, generation, rc_name, inv):
    """POST one inventory: 409 if that class is already inventoried.

    Returns ``(generation, inventories)`` (the provider's new ones)."""
    current = get_all(conn, rp['id'])
    if rc_name in current:
        raise exception.Conflict(
            'Update to resource provider %s failed: inventory for %s '
            'already exists.' % (rp['uuid'], rc_name),
            error_code=exception.CONCURRENT_UPDATE,
        )
    current[rc_name] = inv
    return set_all(conn, rp, generation, current), normalized(current)


def update_one(conn, rp, generation, rc_name, inv):
    current = get_all(conn, rp['id'])
    if rc_name not in current:
        raise exception.BadRequest(
            'No inventory record with resource class for resource provider '
            '%s' % rp['uuid']
        )
    current[rc_name] = inv
    return set_all(conn, rp, generation, current), normalized(current)


def delete_one(conn, rp, rc_name):
    current = get_all(conn, rp['id'])
    if rc_name not in current:
        raise exception.NotFound(
            'No inventory of class %s found for delete' % rc_name
        )
    del current[rc_name]
    return set_all(conn, rp, rp['generation'], current), normalized(current)
