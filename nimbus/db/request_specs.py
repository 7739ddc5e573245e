"""The API database's ``request_specs`` table: the only module that writes
SQL on it. The compute API stores the RequestSpec of each instance of a
create with its build request and deletes it with the build request."""

import sqlalchemy as sa

from nimbus.db.api import models


def _one(primitive, instance_uuid):
    """The request as one instance's: its uuid alone, one instance."""
    return dict(
        primitive, instance_uuids=[instance_uuid], num_instances=1, min_count=1
    )


def add(session, instance_uuid, request_spec):
    """Store ``request_spec`` (a RequestSpec) for one instance."""
    add_many(session, [instance_uuid], request_spec)


def add_many(session, instance_uuids, request_spec):
    """Store ``request_spec`` (a RequestSpec) for each of
    ``instance_uuids``, each row narrowed to its own instance (as Nova's
    per-instance request spec): the readers (recovery, the down-cell
    view) want that instance alone, and a row naming every uuid of a
    multi-create made N rows of N uuids, 37 MB for 1000 instances, over
    MariaDB's default 16 MB packet."""
    primitive = request_spec.to_primitive()
    session.add_all(
        [
            models.RequestSpec(instance_uuid=uuid, spec=_one(primitive, uuid))
            for uuid in instance_uuids
        ]
    )


def insert_many(session, instance_uuids, request_spec):
    """:func:`add_many` as one Core ``INSERT`` of every row, executed at
    once (no ORM object; the compute API's create, where nothing else in
    the transaction is an ORM object waiting for a flush)."""
    primitive = request_spec.to_primitive()
    session.execute(
        sa.insert(models.RequestSpec.__table__),
        [
            {'instance_uuid': uuid, 'spec': _one(primitive, uuid)}
            for uuid in instance_uuids
        ],
    )


def delete(session, instance_uuids):
    session.execute(
        sa.delete(models.RequestSpec).where(
            models.RequestSpec.instance_uuid.in_(list(instance_uuids))
        )
    )


def get(session, instance_uuid):
    """The stored primitive of one instance's RequestSpec, or None."""
    return session.execute(
        sa.select(models.RequestSpec.spec).where(
            models.RequestSpec.instance_uuid == instance_uuid
        )
    ).scalar()


def get_many(session, instance_uuids):
    """``{uuid: stored primitive}`` of those of ``instance_uuids`` that
    have a RequestSpec (one query)."""
    if not instance_uuids:
        return {}
    return dict(
        session.execute(
            sa.select(
                models.RequestSpec.instance_uuid, models.RequestSpec.spec
            ).where(models.RequestSpec.instance_uuid.in_(list(instance_uuids)))
        ).all()
    )


def replace(session, instance_uuid, request_spec):
    """Store ``request_spec`` in place of the instance's (a move that
    changed it for good: an unshelve to another zone)."""
    delete(session, [instance_uuid])
    session.flush()
    add(session, instance_uuid, request_spec)
