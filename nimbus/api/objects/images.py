"""Image records in the API database; uploaded data in files under
``<state_path>/images``."""

import os

from nimbus.common.db import types as db_types
from nimbus.db import images as image_rows

# The image attributes that are columns (the others are properties).
COLUMNS = (
    'name',
    'visibility',
    'container_format',
    'disk_format',
    'min_disk',
    'min_ram',
)


class ImageNotFound(Exception):
    pass


class ImageExists(Exception):
    pass


def to_dict(row):
    props = dict(row.properties or {})
    return {
        'id': row.id,
        'name': row.name,
        'status': row.status,
        'visibility': row.visibility,
        'owner': row.owner,
        'container_format': row.container_format,
        'disk_format': row.disk_format,
        'min_disk': row.min_disk,
        'min_ram': row.min_ram,
        'size': row.size,
        'created_at': row.created_at,
        'updated_at': row.updated_at,
        'properties': props,
    }


def get(db, image_id):
    with db.session() as session:
        row = image_rows.values(session, image_id)
    if row is None:
        raise ImageNotFound(image_id)
    return to_dict(row)


def list_all(
    db,
    project_id=None,
    is_admin=False,
    name=None,
    visibility=None,
    status=None,
):
    with db.session() as session:
        rows = image_rows.listing(
            session, project_id, is_admin, name, visibility, status
        )
        return [to_dict(r) for r in rows]


def create(db, values, properties):
    with db.session() as session:
        if image_rows.get(session, values['id']) is not None:
            raise ImageExists(values['id'])
        return to_dict(image_rows.add(session, values, properties))


def update(db, image_id, columns, properties, removed=()):
    with db.session() as session:
        row = image_rows.get(session, image_id)
        if row is None:
            raise ImageNotFound(image_id)
        for key, value in columns.items():
            setattr(row, key, value)
        props = dict(row.properties or {})
        props.update(properties)
        for key in removed:
            props.pop(key, None)
        row.properties = props
        row.updated_at = db_types.utcnow()
        session.flush()
        return to_dict(row)


def delete(db, image_id):
    with db.session() as session:
        row = image_rows.get(session, image_id)
        if row is None:
            raise ImageNotFound(image_id)
        session.delete(row)


def data_path(conf, image_id):
    """Where an image's uploaded data lives."""
    return os.path.join(conf.state_path, 'images', image_id)


def remove_data(conf, image_id):
    """Forget an image's data (when the image is deleted)."""
    try:
        os.unlink(data_path(conf, image_id))
    except FileNotFoundError:
        pass
