"""The API database's ``request_specs`` table: the only module that writes
SQL on it. The compute API stores the RequestSpec of each instance of a
create with its build request and deletes it with the build request."""

import sqlalchemy as sa

from nimbus.db.api import models


def add(session, instance_uuid, request_spec):
    """Store ``request_spec`` (a RequestSpec) for one instance."""
    session.add(
        models.RequestSpec(
            instance_uuid=instance_uuid, spec=request_spec.to_primitive()
        )
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
