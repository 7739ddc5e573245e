"""The API database's ``build_requests`` table: the only module that
writes SQL on it. The compute API adds one per instance of a create (a
:class:`~nimbus.common.objects.BuildRequest` primitive) and changes or
deletes it while the server has no cell; the super conductor reads it to
create the instance in its cell, then deletes it."""

import sqlalchemy as sa

from nimbus.common.objects import BuildRequest
from nimbus.db.api import models

_T = models.BuildRequest.__table__
# What the super conductor reads of one build request (built once).
_REQUEST_OF = sa.select(_T.c.instance).where(
    _T.c.instance_uuid == sa.bindparam('uuid')
)


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


def insert_many(session, requests):
    """Store ``requests`` (BuildRequests) with one Core ``INSERT``,
    executed at once (no ORM object)."""
    session.execute(
        sa.insert(models.BuildRequest.__table__),
        [
            {
                'instance_uuid': request.uuid,
                'project_id': request.project_id,
                'user_id': request.user_id,
                'instance': request.to_primitive(),
            }
            for request in requests
        ],
    )


def get(session, instance_uuid):
    """The row of ``instance_uuid``, or None."""
    return session.execute(
        sa.select(models.BuildRequest).where(
            models.BuildRequest.instance_uuid == instance_uuid
        )
    ).scalar()


def request_for(session, instance_uuid):
    """The BuildRequest of ``instance_uuid``, or None (what
    ``request_of(get(...))`` gives, without loading the row)."""
    instance = session.execute(_REQUEST_OF, {'uuid': instance_uuid}).scalar()
    return None if instance is None else BuildRequest.from_primitive(instance)


def get_many(session, instance_uuids):
    """``{uuid: row}`` of the build requests of ``instance_uuids`` that
    exist (one query for a multi-create)."""
    rows = session.execute(
        sa.select(models.BuildRequest).where(
            models.BuildRequest.instance_uuid.in_(list(instance_uuids))
        )
    ).scalars()
    return {row.instance_uuid: row for row in rows}


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


def exists(session, instance_uuid):
    """Is there a build request for ``instance_uuid``?"""
    return (
        session.execute(
            sa.select(models.BuildRequest.id).where(
                models.BuildRequest.instance_uuid == instance_uuid
            )
        ).first()
        is not None
    )


def of_project(session, project_id=None):
    """The rows of one project's build requests (every project's without
    ``project_id``)."""
    query = sa.select(models.BuildRequest)
    if project_id is not None:
        query = query.where(models.BuildRequest.project_id == project_id)
    return list(session.execute(query).scalars())


_INSTANCES = sa.select(models.BuildRequest.__table__.c.instance)
_INSTANCES_OF_PROJECT = _INSTANCES.where(
    models.BuildRequest.__table__.c.project_id == sa.bindparam('project_id')
)


def instances_of_project(session, project_id=None):
    """The server dicts (BuildRequest primitives) of one project's build
    requests (every project's without ``project_id``): only that column,
    read with a statement made once (the server list reads it on every
    poll)."""
    if project_id is None:
        return list(session.execute(_INSTANCES).scalars())
    return list(
        session.execute(
            _INSTANCES_OF_PROJECT, {'project_id': project_id}
        ).scalars()
    )


def lease_times(session):
    """``[(instance_uuid, created_at, schedule_started_at)]`` of every
    build request (the audit's view of the schedule leases)."""
    return session.execute(
        sa.select(
            models.BuildRequest.instance_uuid,
            models.BuildRequest.created_at,
            models.BuildRequest.schedule_started_at,
        )
    ).all()


# Schedule leases (the protocol is nimbus.conductor.leases'): a
# compare-and-swap on ``schedule_token`` and ``schedule_started_at``.


def _same_token(token):
    if token is None:
        return models.BuildRequest.schedule_token.is_(None)
    return models.BuildRequest.schedule_token == token


# The statements of a boot's lease, built once (Core, on the table: no
# statement built, cache key made nor ORM state tracked per boot).
_LEASES_OF = sa.select(_T.c.instance_uuid, _T.c.schedule_token).where(
    _T.c.instance_uuid.in_(sa.bindparam('uuids', expanding=True))
)
_TAKE_FREE = (
    sa.update(_T)
    .where(
        _T.c.instance_uuid.in_(sa.bindparam('uuids', expanding=True)),
        _T.c.schedule_token.is_(None),
    )
    .values(
        schedule_token=sa.bindparam('token'),
        schedule_started_at=sa.bindparam('now'),
    )
)


def leases_of(session, instance_uuids):
    """``{uuid: schedule token or None}`` of the build requests of
    ``instance_uuids`` that exist (one query)."""
    return dict(
        session.execute(_LEASES_OF, {'uuids': list(instance_uuids)}).all()
    )


def take_free_leases(session, instance_uuids, token, now):
    """Give ``token`` (started ``now``) the leases nobody holds among
    ``instance_uuids`` (one statement), then read every lease of them
    (one query): ``{uuid: schedule token}`` of the build requests that
    exist, ``token`` where this took it, another where somebody holds
    it."""
    uuids = sorted(instance_uuids)
    if not uuids:
        return {}
    session.execute(_TAKE_FREE, {'uuids': uuids, 'token': token, 'now': now})
    return leases_of(session, uuids)


def take_lease(session, instance_uuid, previous, token, now, expired_before):
    """Swap the lease of ``instance_uuid`` from ``previous`` to ``token``
    (started ``now``) when nobody holds it or it started before
    ``expired_before``; True when this swap won."""
    model = models.BuildRequest
    result = session.execute(
        sa.update(model)
        .where(
            model.instance_uuid == instance_uuid,
            sa.or_(
                model.schedule_token.is_(None),
                model.schedule_started_at < expired_before,
            ),
            _same_token(previous),
        )
        .values(schedule_token=token, schedule_started_at=now)
    )
    return result.rowcount == 1


def holds_lease(session, instance_uuid, token):
    """Does ``token`` hold the lease of ``instance_uuid``'s build
    request?"""
    model = models.BuildRequest
    return (
        session.execute(
            sa.select(model.id).where(
                model.instance_uuid == instance_uuid,
                model.schedule_token == token,
            )
        ).first()
        is not None
    )


_DELETE_LEASED = sa.delete(_T).where(
    _T.c.instance_uuid == sa.bindparam('uuid'),
    _T.c.schedule_token == sa.bindparam('token'),
)
_DELETE_UNLEASED = sa.delete(_T).where(
    _T.c.instance_uuid == sa.bindparam('uuid')
)


def delete_leased(session, instance_uuid, token):
    """Delete the build request of ``instance_uuid`` if ``token`` holds
    its lease (whoever holds it without a token); True when it did."""
    if token is None:
        result = session.execute(_DELETE_UNLEASED, {'uuid': instance_uuid})
    else:
        result = session.execute(
            _DELETE_LEASED, {'uuid': instance_uuid, 'token': token}
        )
    return result.rowcount == 1


def delete_leased_many(session, instance_uuids, token):
    """:func:`delete_leased` for many: deletes the build requests of
    ``instance_uuids`` that ``token`` holds (all that exist without a
    token), locked first so the set deleted is the set returned; the
    uuids deleted."""
    model = models.BuildRequest
    query = sa.select(model.instance_uuid).where(
        model.instance_uuid.in_(list(instance_uuids))
    )
    if token is not None:
        query = query.where(model.schedule_token == token)
    held = set(session.execute(query.with_for_update()).scalars())
    if held:
        deleted = session.execute(
            sa.delete(model).where(model.instance_uuid.in_(sorted(held)))
        ).rowcount
        if deleted != len(held):
            raise RuntimeError(
                'build requests changed under their row locks: %d of %d '
                'deleted' % (deleted, len(held))
            )
    return held
