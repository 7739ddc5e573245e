"""An instance carried to another cell (a cross-cell resize or cold
migrate, :mod:`nimbus.conductor.cross_cell_resize`): the instance row
with its faults written into the target cell's database, and the copy a
cell no longer needs deleted. Part of the owner of the ``instances`` and
``instance_faults`` tables (:mod:`nimbus.db.cell_instances`).

Each function takes sessions of the cells it reads and writes; the two
databases are not one transaction, so the caller orders the steps to be
repeatable (a copy that exists already is replaced).
"""

import sqlalchemy as sa

from nimbus.common.db import row_copy
from nimbus.db.cell import models

Instance = models.Instance
Fault = models.InstanceFault


def copy_instance(source, target, instance_uuid, hidden=True):
    """Write the instance ``instance_uuid`` of the ``source`` session's
    cell into the ``target`` session's cell with its faults (every
    column but the row ids: flavor, system metadata, ARQ references,
    server attributes, lock), ``hidden`` there. A copy left in the target
    by an earlier attempt is replaced. Every column of the tables is
    copied (:func:`nimbus.common.db.row_copy.copy_row`), a new one
    included. The new row, or None when the source has no live
    instance."""
    row = source.execute(
        sa.select(Instance).where(
            Instance.uuid == instance_uuid, Instance.deleted.is_(False)
        )
    ).scalar()
    if row is None:
        return None
    purge(target, instance_uuid)
    copy = row_copy.copy_row(row, hidden=bool(hidden))
    target.add(copy)
    faults = source.execute(
        sa.select(Fault)
        .where(Fault.instance_uuid == instance_uuid)
        .order_by(Fault.id)
    ).scalars()
    target.add_all(row_copy.copy_row(f) for f in faults)
    target.flush()
    return copy


def purge(session, instance_uuid):
    """Delete the instance row and its faults from this cell (the copy of
    a cross-cell move this cell no longer owns: the target's after a
    revert or a failure, the source's after a confirm)."""
    session.execute(
        sa.delete(Fault).where(Fault.instance_uuid == instance_uuid)
    )
    session.execute(sa.delete(Instance).where(Instance.uuid == instance_uuid))
