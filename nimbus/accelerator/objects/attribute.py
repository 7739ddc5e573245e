"""Attributes of deployables (Cyborg's ``/v2/attributes``): a key and a
value an operator records on a deployable. This module owns the
``attributes`` table; :mod:`nimbus.accelerator.objects.device` calls
:func:`delete_for_deployables` when a host stops reporting a deployable.
"""

import sqlalchemy as sa
from oslo_utils import uuidutils

from nimbus.accelerator.db import models as m
from nimbus.accelerator.objects import base

_ATTR = m.Attribute.__table__
_DEP = m.Deployable.__table__


class NotFound(LookupError):
    pass


class UnknownDeployable(LookupError):
    """The ``deployable_id`` names no deployable."""


def _row(row):
    return dict(row._mapping)


def create(adb, deployable_id, key, value):
    def run(conn):
        found = conn.execute(
            sa.select(_DEP.c.id).where(_DEP.c.id == deployable_id)
        ).first()
        if found is None:
            raise UnknownDeployable(deployable_id)
        values = {
            'uuid': uuidutils.generate_uuid(),
            'deployable_id': deployable_id,
            'key': key,
            'value': value,
            'created_at': base.utcnow(),
            'updated_at': None,
        }
        conn.execute(_ATTR.insert().values(**values))
        return values

    return adb.write(run)


def list_attributes(adb, deployable_id=None, key=None):
    query = base.listing(_ATTR, deployable_id=deployable_id, key=key)
    return adb.rows(query)


def get(adb, uuid):
    query = sa.select(_ATTR).where(_ATTR.c.uuid == uuid)
    return _row(adb.first(query, NotFound, uuid))


def delete(adb, uuid):
    def run(conn):
        if not conn.execute(
            _ATTR.delete().where(_ATTR.c.uuid == uuid)
        ).rowcount:
            raise NotFound(uuid)

    adb.write(run)


def delete_for_deployables(conn, deployable_ids):
    """In the caller's transaction: drop the attributes of deployables
    being removed."""
    if deployable_ids:
        conn.execute(
            _ATTR.delete().where(_ATTR.c.deployable_id.in_(deployable_ids))
        )


def of_deployables(adb, deployable_ids):
    """``{deployable id: [{key: value}, ...]}`` in creation order."""
    if not deployable_ids:
        return {}
    query = (
        sa.select(_ATTR.c.deployable_id, _ATTR.c.key, _ATTR.c.value)
        .where(_ATTR.c.deployable_id.in_(list(deployable_ids)))
        .order_by(_ATTR.c.id)
    )
    out = {}
    for row in adb.read(lambda conn: conn.execute(query).fetchall()):
        out.setdefault(row.deployable_id, []).append({row.key: row.value})
    return out
