"""Resource classes: the standard set (synced) and CUSTOM_* classes."""

import os_resource_classes
import sqlalchemy as sa

from nimbus.placement.db import models as m
from nimbus.placement import exception
from nimbus.placement.objects import base

STANDARD = tuple(os_resource_classes.STANDARDS)


def sync_standard(conn):
    """Make the table hold exactly the standard set plus existing customs."""
    stale = base.add_standard_names(
        conn, m.RC, STANDARD, os_resource_classes.CUSTOM_NAMESPACE
    )
    if stale:
        conn.execute(m.RC.delete().where(m.RC.c.name.in_(stale)))


def list_all(conn):
    return (
        conn.execute(
            sa.select(
                m.RC.c.name, m.RC.c.created_at, m.RC.c.updated_at
            ).order_by(m.RC.c.id)
        )
        .mappings()
        .all()
    )


def get(conn, name):
    row = (
        conn.execute(
            sa.select(
                m.RC.c.id, m.RC.c.name, m.RC.c.created_at, m.RC.c.updated_at
            ).where(m.RC.c.name == name)
        )
        .mappings()
        .first()
    )
    if row is None:
        raise exception.NotFound('No such resource class %s.' % name)
    return row


def create(conn, name):
    if (
        conn.execute(sa.select(m.RC.c.id).where(m.RC.c.name == name)).first()
        is not None
    ):
        # No error code here in OpenStack Placement (duplicate_name is
        # the providers' code).
        raise exception.Conflict(
            'Conflicting resource class already exists: %s' % name
        )
    conn.execute(m.RC.insert().values(name=name, created_at=base.utcnow()))


def ensure(conn, name):
    """Create ``name`` unless present; True when it was created."""
    if (
        conn.execute(sa.select(m.RC.c.id).where(m.RC.c.name == name)).first()
        is not None
    ):
        return False
    conn.execute(m.RC.insert().values(name=name, created_at=base.utcnow()))
    return True


def _check_custom(name, what):
    if not name.startswith(os_resource_classes.CUSTOM_NAMESPACE):
        raise exception.BadRequest(
            'Cannot %s standard resource class %s' % (what, name)
        )


def rename(conn, name, new_name):
    """The pre-1.7 PUT: rename a custom class."""
    _check_custom(name, 'update')
    rc = get(conn, name)
    if (
        conn.execute(
            sa.select(m.RC.c.id).where(m.RC.c.name == new_name)
        ).first()
        is not None
    ):
        raise exception.Conflict(
            'Resource class already exists: %s' % new_name
        )
    conn.execute(
        m.RC.update()
        .where(m.RC.c.id == rc['id'])
        .values(name=new_name, updated_at=base.utcnow())
    )


def delete(conn, name):
    _check_custom(name, 'delete')
    rc = get(conn, name)
    for table in (m.INV, m.ALLOC):
        if conn.execute(
            sa.select(table.c.id)
            .where(table.c.resource_class_id == rc['id'])
            .limit(1)
        ).first():
            raise exception.Conflict(
                'Unable to delete resource class %s. It is in use in '
                'inventory or allocations.' % name
            )
    conn.execute(m.RC.delete().where(m.RC.c.id == rc['id']))
