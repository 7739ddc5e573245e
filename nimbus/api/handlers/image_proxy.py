"""The compute API's image proxy: ``GET`` and ``DELETE /v2.1/images/{id}``.

Nova kept these routes from before there was a Glance API of its own and
deprecated them at 2.36: from that microversion on they answer 404.
Below it they show an image of the image API (``nimbus.api.handlers.
images``, with its visibility and policies) in the compute API's shape:
``status`` in capitals (a snapshot being written is ``SAVING``),
``progress``, ``minRam``/``minDisk``, the properties as ``metadata`` and
the snapshot's server when the image has an ``instance_uuid``.
"""

from nimbus.api import policies
from nimbus.api import util
from nimbus.api.handlers import images
from nimbus.api.objects import images as image_obj

# Glance status -> the compute API's (Nova's mapping); any other status
# shows as UNKNOWN.
STATUS = {
    'active': 'ACTIVE',
    'queued': 'SAVING',
    'saving': 'SAVING',
    'importing': 'SAVING',
    'deleted': 'DELETED',
    'pending_delete': 'DELETED',
    'killed': 'ERROR',
}
PROGRESS = {'queued': 25, 'saving': 50, 'active': 100}
LAST_VERSION = (2, 35)


def _check_version(req, image_id):
    if util.version(req) > LAST_VERSION:
        raise util.not_found('Image', image_id)


def view(req, image):
    props = dict(image['properties'])
    body = {
        'id': image['id'],
        'name': image['name'],
        'status': STATUS.get(image['status'], 'UNKNOWN'),
        'progress': PROGRESS.get(image['status'], 0),
        'minRam': image['min_ram'] or 0,
        'minDisk': image['min_disk'] or 0,
        'metadata': props,
        'created': util.isotime(image['created_at']),
        'updated': util.isotime(image['updated_at'] or image['created_at']),
        'OS-EXT-IMG-SIZE:size': image['size'],
        'links': util.links(req, 'images', image['id']),
    }
    server = props.get('instance_uuid')
    if server:
        body['server'] = {
            'id': server,
            'links': util.links(req, 'servers', server),
        }
    return body


def show(req, resp, image_id):
    _check_version(req, image_id)
    util.authorize(req, policies.IMAGES % 'get')
    resp.media = {'image': view(req, images.get_visible(req, image_id))}


def delete(req, resp, image_id):
    _check_version(req, image_id)
    util.authorize(req, policies.IMAGES % 'delete')
    image = images.get_visible(req, image_id)
    images.check_owner(req, image)
    image_obj.delete(util.deps(req).api_db, image_id)
    image_obj.remove_data(util.deps(req).conf, image_id)
    resp.status = 204
