"""Image data and the images API's version documents (Glance's shape).

``PUT /v2/images/{id}/file`` stores the bytes under ``<state_path>/images``
and records ``size``, ``checksum`` (MD5), ``os_hash_algo`` (sha512) and
``os_hash_value``, as Glance does; the image is ``active`` afterwards.
``GET`` of the same path streams them back (204 when there is no data).
Deleting the image deletes its data.

The images API lives in nimbus-api beside the compute API. Its catalog
endpoint is ``<nimbus-api>/image`` (the path devstack gives Glance), whose
``GET /image/`` and ``GET /image/v2`` answer Glance's versions document, so
keystoneauth's discovery finds ``/image/v2/`` and never the compute API's
``/v2.1``. ``GET /v2/`` of the root is the compute API's (Nova's v2.0
version document, whose link ``GET /`` lists): the images API's endpoint is
``<nimbus-api>/image``, as devstack gives Glance its own path.
"""

import hashlib
import os

from nimbus.api import policies
from nimbus.api import util
from nimbus.api.handlers import images
from nimbus.api.objects import images as image_obj
from nimbus.common.wsgi import errors

PREFIX = '/image'
# The versions the document lists, newest first (Glance 30's range).
VERSIONS = ('2.17', '2.16', '2.15', '2.9', '2.0')
CHUNK = 64 * 1024


def _version_list(base):
    return [
        {
            'id': 'v' + version,
            'status': 'CURRENT' if index == 0 else 'SUPPORTED',
            'links': [{'rel': 'self', 'href': base + '/v2/'}],
        }
        for index, version in enumerate(VERSIONS)
    ]


def versions(req, resp):
    """``GET /image/``, ``/image/v2``: the versions of the images API."""
    base = util.base_url(req)
    if req.path.startswith(PREFIX):
        base += PREFIX
    resp.media = {'versions': _version_list(base)}


def upload(req, resp, image_id):
    util.authorize(req, policies.IMAGES % 'modify')
    image = images.get_visible(req, image_id)
    images.check_owner(req, image)
    if image['size'] is not None:
        raise errors.HTTPError(
            409,
            'Image %s already has data; it cannot '
            'be uploaded again.' % image_id,
        )
    content_type = (req.content_type or '').split(';')[0].strip().lower()
    if content_type != 'application/octet-stream':
        raise errors.HTTPError(
            415,
            'The media type %s is not supported, '
            'use application/octet-stream' % (content_type or 'None'),
        )
    conf = util.deps(req).conf
    path = image_obj.data_path(conf, image_id)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    md5, sha512, size = hashlib.md5(usedforsecurity=False), hashlib.sha512(), 0
    partial = path + '.part'
    with open(partial, 'wb') as out:
        while True:
            chunk = req.bounded_stream.read(CHUNK)
            if not chunk:
                break
            out.write(chunk)
            md5.update(chunk)
            sha512.update(chunk)
            size += len(chunk)
    os.replace(partial, path)
    image_obj.update(
        util.deps(req).api_db,
        image_id,
        {'size': size, 'status': 'active'},
        {
            'checksum': md5.hexdigest(),
            'os_hash_algo': 'sha512',
            'os_hash_value': sha512.hexdigest(),
        },
    )
    resp.status = 204


def download(req, resp, image_id):
    util.authorize(req, policies.IMAGES % 'get')
    images.get_visible(req, image_id)
    path = image_obj.data_path(util.deps(req).conf, image_id)
    if not os.path.exists(path):
        resp.status = 204
        return
    resp.content_type = 'application/octet-stream'
    resp.content_length = os.path.getsize(path)
    resp.stream = open(path, 'rb')
