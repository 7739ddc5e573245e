"""What the server actions write on a cell's ``instances`` beyond their
state swap (:func:`nimbus.db.cell_instances.transition`): the lock, a
rebuild's image and attributes, a soft delete's time, and the reclaim's
read. Part of the owner of the table (:mod:`nimbus.db.cell_instances`).
"""

import sqlalchemy as sa

from nimbus.common import instance_states as states
from nimbus.common.db import types
from nimbus.db.cell import models
from nimbus.db.cell_instances import queries


def stamp_soft_deleted(session, instance_uuid):
    """Note when a soft delete began (``deleted_at``; the row stays live
    until the reclaim deletes it, or a restore clears it)."""
    session.execute(
        sa.update(models.Instance)
        .where(models.Instance.uuid == instance_uuid)
        .values(deleted_at=types.utcnow())
    )


def soft_deleted_before(session, host, cutoff):
    """The uuids of the instances on ``host`` soft-deleted (with no task
    under way) before ``cutoff`` (naive UTC): what the reclaim deletes."""
    return _idle_since(
        session, host, states.SOFT_DELETED, models.Instance.deleted_at, cutoff
    )


def _idle_since(session, host, vm_state, stamp, cutoff):
    """The uuids of the live instances on ``host`` in ``vm_state`` with no
    task under way whose ``stamp`` column is before ``cutoff``."""
    return list(
        session.execute(
            sa.select(models.Instance.uuid).where(
                models.Instance.host == host,
                models.Instance.deleted.is_(False),
                models.Instance.vm_state == vm_state,
                models.Instance.task_state.is_(None),
                stamp < cutoff,
            )
        ).scalars()
    )


def set_lock(session, instance_uuid, locked_by, reason=None):
    """Lock (``locked_by`` 'owner' or 'admin', with ``reason``) or unlock
    (``locked_by`` None) a live instance; False when it is gone."""
    result = session.execute(
        sa.update(models.Instance)
        .where(
            models.Instance.uuid == instance_uuid,
            models.Instance.deleted.is_(False),
        )
        .values(
            locked_by=locked_by,
            locked_reason=reason if locked_by else None,
            updated_at=types.utcnow(),
        )
    )
    return result.rowcount == 1


def update_rebuilt(session, instance_uuid, image_ref, attributes):
    """What a rebuild changes before the compute rebuilds the guest: the
    image, and ``attributes``: ``display_name`` and ``metadata`` (columns)
    and server attributes (key name, user data, description, ...); False
    when the instance is gone."""
    row = queries.live(session, instance_uuid)
    if row is None:
        return False
    row.image_ref = image_ref
    attributes = dict(attributes)
    if 'display_name' in attributes:
        row.display_name = attributes.pop('display_name')
    if 'metadata' in attributes:
        row.metadata_items = attributes.pop('metadata')
    merged = dict(row.server_attributes or {})
    merged.update(attributes)
    row.server_attributes = merged
    return True


def shelved_before(session, host, cutoff):
    """The uuids of the instances on ``host`` SHELVED (with no task under
    way) since before ``cutoff`` (naive UTC; the shelve's last swap
    stamped ``updated_at``): what ``[DEFAULT] shelved_offload_time``
    offloads."""
    return _idle_since(
        session, host, states.SHELVED, models.Instance.updated_at, cutoff
    )
