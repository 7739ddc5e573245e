"""The image a server's snapshot (``createImage``) or backup
(``createBackup``) makes, in the image records this API serves under
/image (:mod:`nimbus.api.objects.images`), and the rotation of a server's
backups."""

from nimbus.api.objects import images as image_obj

# Base image properties a snapshot does not inherit (they describe the
# base image itself, as Nova leaves them out).
_NOT_INHERITED = ('image_type', 'instance_uuid', 'base_image_ref')


def create(api_db, record, image_id, body, image_type='snapshot', extra=None):
    """Make the private image ``image_id`` of the server's project from
    the base image's formats and properties and the body's ``name`` and
    ``metadata`` (``image_type`` snapshot or backup, ``extra`` more
    properties); the image dict."""
    base = None
    if record.get('image_ref'):
        try:
            base = image_obj.get(api_db, record['image_ref'])
        except image_obj.ImageNotFound:
            base = None
    flavor = record.get('flavor') or {}
    properties = {
        key: value
        for key, value in ((base or {}).get('properties') or {}).items()
        if key not in _NOT_INHERITED
    }
    properties.update(body.get('metadata') or {})
    properties.update(
        {
            'image_type': image_type,
            'instance_uuid': record['uuid'],
            'base_image_ref': record.get('image_ref') or '',
            'user_id': record.get('user_id') or '',
        }
    )
    properties.update(extra or {})
    columns = {
        'id': image_id,
        'name': body['name'],
        'visibility': 'private',
        'owner': record['project_id'],
        'container_format': (base or {}).get('container_format') or 'bare',
        'disk_format': (base or {}).get('disk_format') or 'raw',
        'min_disk': max(
            int((base or {}).get('min_disk') or 0),
            int(flavor.get('root_gb') or 0),
        ),
        'min_ram': int((base or {}).get('min_ram') or 0),
    }
    return image_obj.create(api_db, columns, properties)


def backups_of(api_db, instance_uuid, backup_type):
    """The server's backup images of ``backup_type``, newest first (by
    creation time, then id)."""
    found = [
        image
        for image in image_obj.list_all(api_db, project_id=None, is_admin=True)
        if (image.get('properties') or {}).get('image_type') == 'backup'
        and image['properties'].get('instance_uuid') == instance_uuid
        and image['properties'].get('backup_type') == backup_type
    ]
    found.sort(key=lambda i: (i['created_at'], i['id']), reverse=True)
    return found


def rotate(api_db, instance_uuid, backup_type, rotation):
    """Delete the server's backups of ``backup_type`` beyond the newest
    ``rotation`` (0: every one, as Nova); the ids deleted."""
    deleted = []
    for image in backups_of(api_db, instance_uuid, backup_type)[rotation:]:
        try:
            image_obj.delete(api_db, image['id'])
        except image_obj.ImageNotFound:
            continue  # deleted meanwhile
        deleted.append(image['id'])
    return deleted
