"""Traits (standard set from os-traits, CUSTOM_*) and provider traits."""

import os_traits
import sqlalchemy as sa

from nimbus.placement.db import models as m
from nimbus.placement import exception
from nimbus.placement.objects import base
from nimbus.placement.objects import statements

STANDARD = tuple(os_traits.get_traits())


def sync_standard(conn):
    """Add missing standard traits; drop unused ones no longer standard."""
    stale = base.add_standard_names(
        conn, m.TRAIT, STANDARD, os_traits.CUSTOM_NAMESPACE
    )
    if stale:
        used = sa.select(m.RPT.c.trait_id)
        conn.execute(
            m.TRAIT.delete()
            .where(m.TRAIT.c.name.in_(stale))
            .where(m.TRAIT.c.id.not_in(used))
        )


def list_names(conn, names=None, prefix=None, associated=None):
    """Trait names in Placement's order: by name when picked by name
    (``name=in:``, read through the name index there), else as created."""
    query = sa.select(m.TRAIT.c.name).order_by(
        m.TRAIT.c.name if names is not None else m.TRAIT.c.id
    )
    if names is not None:
        query = query.where(m.TRAIT.c.name.in_(list(names)))
    if prefix is not None:
        query = query.where(m.TRAIT.c.name.startswith(prefix, autoescape=True))
    if associated is not None:
        used = sa.select(m.RPT.c.trait_id)
        query = query.where(
            m.TRAIT.c.id.in_(used) if associated else m.TRAIT.c.id.not_in(used)
        )
    return [r[0] for r in conn.execute(query)]


def exists(conn, name):
    return (
        conn.execute(
            sa.select(m.TRAIT.c.id).where(m.TRAIT.c.name == name)
        ).first()
        is not None
    )


def ensure(conn, name):
    """Create a custom trait unless present; True when created."""
    if exists(conn, name):
        return False
    conn.execute(m.TRAIT.insert().values(name=name, created_at=base.utcnow()))
    return True


def delete(conn, name):
    if not name.startswith(os_traits.CUSTOM_NAMESPACE):
        raise exception.BadRequest('Cannot delete standard trait %s.' % name)
    row = conn.execute(
        sa.select(m.TRAIT.c.id).where(m.TRAIT.c.name == name)
    ).first()
    if row is None:
        raise exception.NotFound('No such trait(s): %s.' % name)
    if conn.execute(
        sa.select(m.RPT.c.trait_id).where(m.RPT.c.trait_id == row[0]).limit(1)
    ).first():
        raise exception.Conflict(
            'The trait %s is in use by a resource provider.' % name
        )
    conn.execute(m.TRAIT.delete().where(m.TRAIT.c.id == row[0]))


# Built once (see objects.base).
_PROVIDER_TRAITS = (
    sa.select(m.TRAIT.c.name)
    .select_from(m.RPT.join(m.TRAIT, m.TRAIT.c.id == m.RPT.c.trait_id))
    .where(m.RPT.c.resource_provider_id == sa.bindparam('b_rp'))
    .order_by(m.RPT.c.trait_id)
)
_TRAIT_IDS = base.members_query(m.RPT.c.trait_id)
_INSERT_RPT = statements.fast(m.RPT.insert())
# For resource_provider.get_ref_with: a provider's trait ids.
PROVIDER_TRAIT_COLUMNS = (m.RPT.c.trait_id,)


def provider_traits(conn, rp_id):
    """A provider's trait names in id order (as Placement lists them)."""
    return [r[0] for r in conn.execute(_PROVIDER_TRAITS, {'b_rp': rp_id})]


def set_provider_traits(conn, rp_id, generation, names, have=None):
    """Replace a provider's traits, guarded by its generation.

    Returns the new generation; the provider's traits are then
    ``sorted(set(names))``. ``have``: the provider's current trait ids when
    the caller read them with the provider."""
    ids = base.name_ids(conn, m.TRAIT, names)
    missing = sorted(set(names) - set(ids))
    if missing:
        raise exception.BadRequest(
            'No such trait(s): %s.' % ', '.join(missing)
        )
    # Read before the generation compare-and-swap: if that succeeds, no
    # one changed the traits in between (every change moves it).
    if have is None:
        have = {r[0] for r in conn.execute(_TRAIT_IDS, {'b_rp': rp_id})}
    have = set(have)
    want = set(ids.values())
    if have == want:
        # Nothing changes: the generation is checked, not moved (as in
        # OpenStack Placement).
        current = conn.execute(
            sa.select(m.RP.c.generation).where(m.RP.c.id == rp_id)
        ).scalar()
        if current != generation:
            raise exception.ConcurrentUpdate(what='The resource provider')
        return generation
    new_gen = base.increment_generation(conn, rp_id, generation)
    base.replace_members(
        conn, _INSERT_RPT, m.RPT.c.trait_id, rp_id, have, want
    )
    return new_gen
