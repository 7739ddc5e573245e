"""The accelerators of a resize or cold migrate to another cell
(:mod:`.cross_cell_resize`; beyond Nova, which moves no server with a
device profile). The accelerator service is global, so the same-cell
move's way (:mod:`nimbus.compute.move_arqs`) carries over; the super
conductor holds the records and deletes what each end frees:

- the scheduler's device providers on the destination (its allocation
  request's ``mappings``) go into the migration's details
  (``dest_device_mappings``) before anything is copied, beside the
  source's ARQs (``source_accel_uuids``, recorded by
  :func:`.resize.migrate_server`);
- the destination's ``prep_snapshot_based_resize_at_dest`` (compute RPC
  1.8) creates ARQs of the new flavor's profile (the same profile for a
  cold migrate), binds them to itself, records them on the target
  cell's copy of the migration (``dest_accel_uuids``) and waits for
  ``accelerator-request-bound`` before it answers; the super conductor
  then writes them on the source's migration too (:func:`take_recorded`),
  so the finish spawns the guest with them;
- the switch makes them the target copy's ``accel_uuids``
  (:func:`switch_updates`); the source's copy keeps the source's;
- confirm deletes the source's ARQs (:func:`confirm`); revert the
  destination's (:func:`revert`), the source's copy, shown again, still
  naming its own;
- a move that fails or is undone by the recovery pass (:func:`undo`)
  deletes the destination's: those recorded in either cell, and any other
  ARQ of the instance bound to the destination host (one made and not
  recorded when a process died between the two).

Moving a server with accelerators needs an accelerator client here and
computes that read compute RPC 1.8 (:func:`check`).
"""

from nimbus.common import exception
from nimbus.conductor import dest_arqs
from nimbus.db import cell_migrations

# The migration's details, as nimbus.compute.move_arqs names them.
SOURCE = dest_arqs.SOURCE
DEST = dest_arqs.DEST
MAPPINGS = 'dest_device_mappings'


def _profile(flavor):
    return ((flavor or {}).get('extra_specs') or {}).get(
        'accel:device_profile'
    ) or None


def _details(migration):
    return migration.get('details') or {}


def check(conductor, cell, instance, spec):
    """Raise NoValidHost when the server has accelerators (ARQs, or a
    device profile in the move's flavor) and they cannot be carried out
    of ``cell``: computes capped below compute RPC 1.8, or no
    accelerator service configured."""
    specs = (spec.flavor.extra_specs or {}) if spec.flavor else {}
    if not (instance.get('accel_uuids') or specs.get('accel:device_profile')):
        return
    if not conductor.compute_api(cell).takes_cross_cell_arqs():
        raise exception.NoValidHost(
            reason='the scheduler chose a host of another cell and the '
            'computes are capped below compute RPC 1.8 (cross-cell moves '
            'of a server with accelerators)'
        )
    if conductor.accelerator is None:
        raise exception.NoValidHost(
            reason='the scheduler chose a host of another cell for a '
            'server with accelerators and no accelerator service is '
            'configured'
        )


def prep_details(migration, selected):
    """The migration's details to add before the destination's prep: the
    device providers the scheduler gave each request group there (none
    without a device profile)."""
    if not _profile(migration.get('new_flavor')):
        return {}
    return {
        MAPPINGS: dict(
            (selected.allocation_request or {}).get('mappings') or {}
        )
    }


def _recorded(db, migration_uuid):
    """The destination's ARQs on a cell's migration ([] without one)."""
    with db.session() as session:
        found = cell_migrations.get(session, migration_uuid)
    return list(((found or {}).get('details') or {}).get(DEST) or [])


def take_recorded(move, migration):
    """After the destination's prep: the ARQs it recorded in the target
    cell written on the source's migration as well (and on
    ``migration``, the move's dict, in place)."""
    uuids = _recorded(move.db(move.target), migration['uuid'])
    if not uuids:
        return
    details = dict(_details(migration), **{DEST: uuids})
    with move.db(move.source).session() as session:
        cell_migrations.update(session, migration['uuid'], details=details)
    migration['details'] = details


def switch_updates(migration):
    """The target copy's side of the switch: the destination's ARQs."""
    return {'accel_uuids': list(_details(migration).get(DEST) or [])}


def _only(migration, which, other):
    keep = set(_details(migration).get(other) or [])
    return [u for u in _details(migration).get(which) or [] if u not in keep]


def confirm(conductor, ctxt, migration):
    """A confirmed move frees the source's ARQs (those the destination
    does not hold too)."""
    dest_arqs.delete(conductor, ctxt, _only(migration, SOURCE, DEST))


def revert(conductor, ctxt, migration):
    """A reverted move frees the destination's ARQs; the source's copy
    still names its own."""
    dest_arqs.delete(conductor, ctxt, _only(migration, DEST, SOURCE))


def forget(conductor, ctxt, migration):
    """The server was deleted while its move's end waited: both ends'
    ARQs go (deleting one already gone is harmless)."""
    details = _details(migration)
    dest_arqs.delete(
        conductor,
        ctxt,
        sorted(set(details.get(SOURCE) or []) | set(details.get(DEST) or [])),
    )


def undo(move, migration, dest_host):
    """A failed or interrupted move (before its switch) frees the
    destination's ARQs: those recorded on either cell's migration, and
    any other ARQ of the instance bound to ``dest_host``; never the
    source's. Run before the target's copy is dropped."""
    recorded = list(_details(migration).get(DEST) or [])
    for cell in (move.source, move.target):
        recorded += _recorded(move.db(cell), migration['uuid'])
    return dest_arqs.undo(
        move.conductor,
        move.ctxt,
        move.uuid,
        dest_host,
        recorded,
        _details(migration).get(SOURCE) or [],
    )
