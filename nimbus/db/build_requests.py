"""The API database's ``build_requests`` table: the only module that
writes SQL on it. The compute API adds one per instance of a create (a
:class:`~nimbus.common.objects.BuildRequest` primitive) and changes or
deletes it while the server has no cell; the super conductor reads it to
create the instance in its cell, then deletes it."""

import sqlalchemy as sa

from nimbus.common.objects import BuildRequest
from nimbus.db.api import models


def add(session, request):
    """Store ``request`` (a BuildRequest)."""
    session.add(
        models.BuildRequest(
            instance_uuid=request.uuid,
            project_id=request.project_id,
            user_id=request.user_id,
            instance=request.to_primitive(),
        )
    )


def get(session, instance_uuid):
    """The row of ``instance_uuid``, or None."""
    return session.execute(
        sa.select(models.BuildRequest).where(
            models.BuildRequest.instance_uuid == instance_uuid
        )
    ).scalar()


def delete(session, instance_uuids):
    """Delete the build requests of these instances; how many there were."""
    return session.execute(
        sa.delete(models.BuildRequest).where(
            models.BuildRequest.instance_uuid.in_(list(instance_uuids))
        )
    ).rowcount


def update_instance(session, instance_uuid, values):
    """Change the server a build request holds (``PUT /servers/{id}``
    before the server has a cell); False when it has none any more."""
    row = get(session, instance_uuid)
    if row is None:
        return False
    row.instance = dict(row.instance, **values)
    return True


def request_of(row):
    """The BuildRequest a row holds."""
    return BuildRequest.from_primitive(row.instance)
