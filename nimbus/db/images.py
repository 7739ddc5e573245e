"""The API database's ``images`` table: the only module that writes SQL on
it. The compute API's Glance-shaped images API keeps the records
(:mod:`nimbus.api.objects.images`); the scheduler reads their properties
(the image-properties filter and weigher)."""

import sqlalchemy as sa

from nimbus.db.api import models

Image = models.Image


def get(session, image_id):
    """The image's row, or None."""
    return session.get(Image, image_id)


_ROW = sa.select(*Image.__table__.c).where(
    Image.__table__.c.id == sa.bindparam('image_id')
)


def values(session, image_id):
    """The image's columns (a Core row, no ORM object: every create reads
    its image), or None."""
    return session.execute(_ROW, {'image_id': image_id}).first()


def listing(session, project_id, is_admin, name, visibility, status):
    """The rows an images list shows, newest first: with ``name`` and
    ``status`` only those, ``visibility`` one kind (``all``: every one),
    and for a non-admin only public, community and its project's own."""
    query = sa.select(Image).order_by(Image.created_at.desc(), Image.id)
    if name is not None:
        query = query.where(Image.name == name)
    if status is not None:
        query = query.where(Image.status == status)
    if visibility not in (None, 'all'):
        query = query.where(Image.visibility == visibility)
    if not is_admin:
        query = query.where(
            sa.or_(
                Image.visibility.in_(('public', 'community')),
                Image.owner == project_id,
            )
        )
    return list(session.execute(query).scalars())


def add(session, values, properties):
    """A new active image row of ``values`` (its columns) and
    ``properties``."""
    row = Image(status='active', properties=properties, **values)
    session.add(row)
    session.flush()
    return row


def properties_by_id(session):
    """``{image id: properties}`` of every image."""
    return {
        row.id: dict(row.properties or {})
        for row in session.execute(sa.select(Image.id, Image.properties))
    }


def properties_of(session, image_id):
    """One image's properties, None when there is no such image."""
    row = session.execute(
        sa.select(Image.properties).where(Image.id == image_id)
    ).first()
    return None if row is None else dict(row[0] or {})


def delete(session, image_id):
    """Delete the image's row; False when there is none."""
    row = session.get(Image, image_id)
    if row is None:
        return False
    session.delete(row)
    return True
