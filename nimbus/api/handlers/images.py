"""A Glance-shaped image subset at /v2/images (and /image/v2/images).

Core attributes are columns; every other top-level key is a property, as in
Glance. ``PUT`` merges properties (a ``null`` value removes one); ``PATCH``
takes the JSON-patch form openstacksdk sends (add/replace/remove).
"""

from oslo_utils import uuidutils

from nimbus.api import policies
from nimbus.api import util
from nimbus.api.objects import images as image_obj
from nimbus.api.schemas import images as schema
from nimbus.common.wsgi import errors
from nimbus.common.wsgi import json_body

PATCH_TYPE = 'application/openstack-images-v2.1-json-patch'
PATCH_TYPE_V20 = 'application/openstack-images-v2.0-json-patch'


def view(image):
    body = {
        'id': image['id'],
        'name': image['name'],
        'status': image['status'],
        'visibility': image['visibility'],
        'owner': image['owner'],
        'protected': False,
        'os_hidden': False,
        'container_format': image['container_format'],
        'disk_format': image['disk_format'],
        'min_disk': image['min_disk'],
        'min_ram': image['min_ram'],
        'size': image['size'],
        'virtual_size': None,
        'checksum': None,
        'os_hash_algo': None,
        'os_hash_value': None,
        'tags': [],
        'created_at': util.isotime(image['created_at']),
        'updated_at': util.isotime(image['updated_at'] or image['created_at']),
        'self': '/v2/images/%s' % image['id'],
        'file': '/v2/images/%s/file' % image['id'],
        'schema': '/v2/schemas/image',
    }
    props = dict(image['properties'])
    for key in ('tags', 'protected', 'os_hidden'):
        if key in props:
            body[key] = props.pop(key)
    body.update(props)
    return body


def get_visible(req, image_id):
    try:
        image = image_obj.get(util.deps(req).api_db, image_id)
    except image_obj.ImageNotFound as exc:
        raise util.not_found('Image', image_id) from exc
    ctx = util.ctx(req)
    if (
        image['visibility'] not in ('public', 'community')
        and not ctx.is_admin
        and image['owner'] != ctx.project_id
    ):
        raise util.not_found('Image', image_id)
    return image


def index(req, resp):
    util.authorize(req, policies.IMAGES % 'get')
    params = util.query(req, schema.INDEX_QUERY)
    ctx = util.ctx(req)
    items = image_obj.list_all(
        util.deps(req).api_db,
        project_id=ctx.project_id,
        is_admin=ctx.is_admin,
        name=params.get('name'),
        visibility=params.get('visibility'),
        status=params.get('status'),
    )
    wanted = {
        key: value
        for key, value in params.items()
        if key not in schema.INDEX_QUERY['properties']
    }
    if wanted:
        items = [i for i in items if _has_properties(i, wanted)]
    if 'sort_key' in params or 'sort_dir' in params:
        items = _sorted(
            items,
            params.get('sort_key', 'created_at'),
            params.get('sort_dir', 'desc'),
        )
    limit = util.limit_of(req, params)
    items, more = util.page(items, lambda i: i['id'], params, limit)
    body = {
        'images': [view(i) for i in items],
        'first': '/v2/images',
        'schema': '/v2/schemas/images',
    }
    if more and items:
        body['next'] = '/v2/images?marker=%s&limit=%d' % (
            items[-1]['id'],
            limit,
        )
    resp.media = body


def _has_properties(image, wanted):
    shown = view(image)
    return all(str(shown.get(k)) == v for k, v in wanted.items())


def _sorted(items, key, direction):
    """``items`` by ``key`` (then id), ``asc`` or ``desc``; images
    without the key (no size) first in ``asc``."""

    def order(image):
        value = image.get(key)
        return (value is not None, value if value is not None else 0)

    return sorted(
        sorted(items, key=lambda i: i['id'], reverse=direction == 'desc'),
        key=order,
        reverse=direction == 'desc',
    )


def tasks(req, resp, image_id):
    """``GET /v2/images/{id}/tasks`` (Glance 2.12): the import tasks of
    an image. Images here are made whole at once, so never any."""
    util.authorize(req, policies.IMAGES % 'get')
    get_visible(req, image_id)
    resp.media = {'tasks': []}


def show(req, resp, image_id):
    util.authorize(req, policies.IMAGES % 'get')
    resp.media = view(get_visible(req, image_id))


def _split(body):
    columns = {k: v for k, v in body.items() if k in image_obj.COLUMNS}
    props = {
        k: v
        for k, v in body.items()
        if k not in image_obj.COLUMNS and k != 'id'
    }
    bad = set(props) & schema.READ_ONLY
    if bad:
        raise errors.HTTPError(
            403, 'Attribute %s is read-only.' % sorted(bad)[0]
        )
    return columns, props


def create(req, resp):
    util.authorize(req, policies.IMAGES % 'create')
    body = json_body(req, schema.CREATE) or {}
    columns, props = _split(body)
    columns.setdefault('visibility', 'shared')
    columns['id'] = body.get('id') or uuidutils.generate_uuid()
    columns['owner'] = util.ctx(req).project_id
    if columns['visibility'] == 'public' and not util.ctx(req).is_admin:
        raise errors.HTTPError(
            403, 'Only administrators may publish public images.'
        )
    try:
        image = image_obj.create(util.deps(req).api_db, columns, props)
    except image_obj.ImageExists as exc:
        raise util.conflict(
            'Image ID %s already exists.' % columns['id']
        ) from exc
    resp.status = 201
    resp.set_header('Location', '/v2/images/%s' % image['id'])
    resp.media = view(image)


def check_owner(req, image):
    ctx = util.ctx(req)
    if not ctx.is_admin and image['owner'] != ctx.project_id:
        raise errors.HTTPError(
            403, 'You are not permitted to modify image %s.' % image['id']
        )


def update(req, resp, image_id):
    util.authorize(req, policies.IMAGES % 'modify')
    image = get_visible(req, image_id)
    check_owner(req, image)
    body = json_body(req, schema.UPDATE) or {}
    columns, props = _split(body)
    removed = [k for k, v in props.items() if v is None]
    props = {k: v for k, v in props.items() if v is not None}
    image = image_obj.update(
        util.deps(req).api_db, image_id, columns, props, removed
    )
    resp.media = view(image)


def _patch_ops(req):
    """The body's operations in the v2.1 form (``op``, ``path``,
    ``value``); the v2.0 media type's ``{"add": path}`` is translated."""
    content_type = (req.content_type or '').split(';')[0].strip().lower()
    if content_type != PATCH_TYPE_V20:
        return util.json_body_any(
            req, schema.PATCH, (PATCH_TYPE, PATCH_TYPE_V20, 'application/json')
        )
    ops = util.json_body_any(req, schema.PATCH_V20, (PATCH_TYPE_V20,))
    translated = []
    for op in ops:
        name = next(k for k in ('add', 'replace', 'remove') if k in op)
        entry = {'op': name, 'path': op[name]}
        if 'value' in op:
            entry['value'] = op['value']
        translated.append(entry)
    return translated


def patch(req, resp, image_id):
    util.authorize(req, policies.IMAGES % 'modify')
    image = get_visible(req, image_id)
    check_owner(req, image)
    ops = _patch_ops(req)
    columns, props, removed = {}, {}, []
    for op in ops:
        key = op['path'][1:]
        if key in schema.READ_ONLY or key == 'id':
            raise errors.HTTPError(403, 'Attribute %s is read-only.' % key)
        if op['op'] == 'remove':
            if key in image_obj.COLUMNS:
                raise errors.HTTPError(
                    403, 'Attribute %s cannot be removed.' % key
                )
            removed.append(key)
            continue
        if 'value' not in op:
            raise util.bad_request(
                "Operation %s on %s needs a 'value'." % (op['op'], key)
            )
        if key in image_obj.COLUMNS:
            columns[key] = op['value']
        else:
            props[key] = op['value']
    util.validate_data(dict(columns, **props), schema.UPDATE)
    image = image_obj.update(
        util.deps(req).api_db, image_id, columns, props, removed
    )
    resp.media = view(image)


def delete(req, resp, image_id):
    util.authorize(req, policies.IMAGES % 'delete')
    image = get_visible(req, image_id)
    check_owner(req, image)
    image_obj.delete(util.deps(req).api_db, image_id)
    image_obj.remove_data(util.deps(req).conf, image_id)
    resp.status = 204
