"""Many new providers, with their inventories and traits, in one write.

:func:`create_many` is what ``POST /resource_providers``, ``PUT
/resource_providers/{uuid}/inventories`` and ``PUT
/resource_providers/{uuid}/traits`` do for each provider of a list, in one
transaction: one bump of the change counters for the whole list instead
of three per provider, the resource class and trait ids resolved once,
and the inventory and trait rows inserted in one statement each. It is no
route of the API (Placement's wire behaviour is unchanged): the all-in-one
cloud's simulated hosts and accelerator agents reach it in process
(:func:`nimbus.placement.direct.tree_writer`) to register a thousand hosts'
trees at start, where they sent about seven requests per host.

A provider ends at the generation the three requests would have given
it: 0 at creation, one more for a non-empty inventory and one more for
non-empty traits.
"""

from nimbus.placement.db import models as m
from nimbus.placement import exception
from nimbus.placement.objects import base
from nimbus.placement.objects import inventory
from nimbus.placement.objects import resource_provider
from nimbus.placement.objects import statements

_INSERT_INV = statements.fast(m.INV.insert())
_INSERT_RPT = statements.fast(m.RPT.insert())


def _ids(conn, table, names, what):
    ids = base.name_ids(conn, table, names)
    missing = sorted(set(names) - set(ids))
    if missing:
        raise exception.BadRequest(
            'No such %s: %s.' % (what, ', '.join(missing))
        )
    return ids


def create_many(conn, providers):
    """Create ``providers``, each ``{"uuid", "name", "parent_provider_uuid"
    (None for a root), "inventories": {rc: fields}, "traits": [names]}``,
    a parent before its children (a parent may also exist already).
    Returns ``{uuid: generation}``. A uuid or name already taken raises
    :class:`~nimbus.placement.exception.Conflict` and nothing is written
    (the caller's transaction rolls back); an unknown resource class,
    trait or parent raises BadRequest."""
    rc_ids = _ids(
        conn,
        m.RC,
        {rc for p in providers for rc in p.get('inventories') or {}},
        'resource class(es)',
    )
    trait_ids = _ids(
        conn,
        m.TRAIT,
        {t for p in providers for t in p.get('traits') or ()},
        'trait(s)',
    )
    base.take_counter_lock(conn)
    now = base.utcnow()
    made = {}  # uuid -> (id, root id)
    generations = {}
    inventory_rows, trait_rows = [], []
    for provider in providers:
        uuid = provider['uuid']
        parent_uuid = provider.get('parent_provider_uuid')
        parent = None
        if parent_uuid is not None:
            parent = made.get(parent_uuid)
            if parent is None:
                parent = resource_provider.parent_of(conn, parent_uuid)
        inventories = provider.get('inventories') or {}
        traits = set(provider.get('traits') or ())
        generation = int(bool(inventories)) + int(bool(traits))
        try:
            rp_id = resource_provider.insert(
                conn, uuid, provider['name'], generation, parent, now
            )
        except resource_provider._Clash as exc:
            raise exception.Conflict(
                'Conflicting resource provider uuid or name: %s (%s).'
                % (uuid, provider['name']),
                error_code=exception.DUPLICATE_NAME,
            ) from exc
        root_id = parent[1] if parent else rp_id
        made[uuid] = (rp_id, root_id)
        generations[uuid] = generation
        for rc, fields in inventories.items():
            inventory_rows.append(
                dict(
                    inventory.with_defaults(fields),
                    resource_provider_id=rp_id,
                    resource_class_id=rc_ids[rc],
                    created_at=now,
                    updated_at=now,
                )
            )
        trait_rows.extend(
            {'resource_provider_id': rp_id, 'trait_id': trait_ids[t]}
            for t in sorted(traits)
        )
    if inventory_rows:
        conn.execute(_INSERT_INV, inventory_rows)
    if trait_rows:
        conn.execute(_INSERT_RPT, trait_rows)
    return generations
