"""The API database's ``instance_mappings`` table: the only module that
writes SQL on it. The compute API maps each instance of a create with
its build request (no cell yet); the super conductor records the cell
the instance went to (cell0 when it got no host); the compute API
queues a mapping for delete, or deletes it with a build request that
never left; the audit reads them and moves a mapping left behind."""

import sqlalchemy as sa

from nimbus.common.db import chunks
from nimbus.db.api import models

Mapping = models.InstanceMapping


def add(session, instance_uuid, project_id, user_id=None):
    """Map a new instance to no cell (it is a build request)."""
    session.add(
        Mapping(
            instance_uuid=instance_uuid,
            cell_id=None,
            project_id=project_id,
            user_id=user_id,
        )
    )


def insert_many(session, instances):
    """Map new instances to no cell (build requests), one Core ``INSERT``
    executed at once: ``instances`` are ``(uuid, project_id, user_id)``."""
    session.execute(
        sa.insert(Mapping.__table__),
        [
            {
                'instance_uuid': uuid,
                'cell_id': None,
                'project_id': project_id,
                'user_id': user_id,
            }
            for uuid, project_id, user_id in instances
        ],
    )


def get(session, instance_uuid):
    """The mapping row of ``instance_uuid``, or None."""
    return session.execute(
        sa.select(Mapping).where(Mapping.instance_uuid == instance_uuid)
    ).scalar()


def exists(session, instance_uuid):
    return (
        session.execute(
            sa.select(Mapping.id).where(Mapping.instance_uuid == instance_uuid)
        ).first()
        is not None
    )


_T = Mapping.__table__
# One instance's cell, as the super conductor records it (built once).
_SET_CELL = (
    sa.update(_T)
    .where(_T.c.instance_uuid == sa.bindparam('uuid'))
    .values(cell_id=sa.bindparam('new_cell'))
)
_SET_CELL_IF_UNMAPPED = _SET_CELL.where(_T.c.cell_id.is_(None))


def set_cell(session, instance_uuid, cell_id, only_unmapped=False):
    """Record the instance's cell (only while it has none with
    ``only_unmapped``)."""
    session.execute(
        _SET_CELL_IF_UNMAPPED if only_unmapped else _SET_CELL,
        {'uuid': instance_uuid, 'new_cell': cell_id},
    )


def set_cells(session, instance_uuids, cell_id):
    """Record one cell for many instances (one statement)."""
    if instance_uuids:
        session.execute(
            sa.update(Mapping)
            .where(Mapping.instance_uuid.in_(sorted(instance_uuids)))
            .values(cell_id=cell_id)
        )


def delete(session, instance_uuids, only_unmapped=False):
    """Delete the mappings of these instances (only those without a cell
    with ``only_unmapped``)."""
    query = sa.delete(Mapping).where(
        Mapping.instance_uuid.in_(list(instance_uuids))
    )
    if only_unmapped:
        query = query.where(Mapping.cell_id.is_(None))
    session.execute(query)


def queue_for_delete(session, instance_uuid):
    session.execute(
        sa.update(Mapping)
        .where(Mapping.instance_uuid == instance_uuid)
        .values(queued_for_delete=True)
    )


def unqueue_for_delete(session, instance_uuid):
    """A soft-deleted server restored: it is no longer on its way out."""
    session.execute(
        sa.update(Mapping)
        .where(Mapping.instance_uuid == instance_uuid)
        .values(queued_for_delete=False)
    )


def cells_of(session, instance_uuids):
    """``[(instance_uuid, cell_id)]`` of those of these instances that are
    in a cell."""
    return session.execute(
        sa.select(Mapping.instance_uuid, Mapping.cell_id).where(
            Mapping.instance_uuid.in_(list(instance_uuids)),
            Mapping.cell_id.is_not(None),
        )
    ).all()


def count_of_project(session, project_id):
    """How many servers ``project_id`` has (not queued for delete)."""
    return session.execute(
        sa.select(sa.func.count()).where(
            Mapping.project_id == project_id,
            Mapping.queued_for_delete.is_(False),
        )
    ).scalar()


def uuids_of_project(session, project_id):
    """The instance uuids of ``project_id``'s servers not queued for
    delete (one statement on the project's index): their number is what
    :func:`count_of_project` counts; the create's quota recheck compares
    two of these sets to find the servers created in between."""
    return frozenset(
        session.execute(
            sa.select(Mapping.instance_uuid).where(
                Mapping.project_id == project_id,
                Mapping.queued_for_delete.is_(False),
            )
        ).scalars()
    )


def count_by_cell(session):
    """``{cell_id: servers not queued for delete}``."""
    return dict(
        session.execute(
            sa.select(Mapping.cell_id, sa.func.count())
            .where(Mapping.queued_for_delete.is_(False))
            .group_by(Mapping.cell_id)
        ).all()
    )


def unmapped(session):
    """``[(instance_uuid, cell_id, created_at)]`` of the mappings to no
    cell yet (builds being scheduled, or left behind by one)."""
    return session.execute(
        sa.select(
            Mapping.instance_uuid, Mapping.cell_id, Mapping.created_at
        ).where(Mapping.cell_id.is_(None))
    ).all()


def of(session, instance_uuids):
    """``[(instance_uuid, cell_id, created_at)]`` of these instances'
    mappings (any number of uuids: read in chunks)."""
    rows = []
    for chunk in chunks.chunked(instance_uuids):
        rows += session.execute(
            sa.select(
                Mapping.instance_uuid, Mapping.cell_id, Mapping.created_at
            ).where(Mapping.instance_uuid.in_(chunk))
        ).all()
    return rows


def page(session, after_id=0, limit=chunks.CHUNK):
    """``[(id, instance_uuid, cell_id)]`` of at most ``limit`` mappings
    with an id above ``after_id``, by id: every mapping ever made, a page
    at a time, in bounded memory."""
    return session.execute(
        sa.select(Mapping.id, Mapping.instance_uuid, Mapping.cell_id)
        .where(Mapping.id > after_id)
        .order_by(Mapping.id)
        .limit(limit)
    ).all()


def live_in_cells(session, cell_ids, project_id=None, count=None):
    """The mapping rows of the servers (not queued for delete) in these
    cells, newest first, at most ``count`` (one project's with
    ``project_id``)."""
    query = (
        sa.select(Mapping)
        .where(
            Mapping.cell_id.in_(list(cell_ids)),
            Mapping.queued_for_delete.is_(False),
        )
        .order_by(Mapping.created_at.desc(), Mapping.instance_uuid.desc())
        .limit(count)
    )
    if project_id is not None:
        query = query.where(Mapping.project_id == project_id)
    return session.execute(query).scalars().all()
