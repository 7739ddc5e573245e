"""/flavors, /flavors/detail, /flavors/{id} and os-extra_specs."""

from oslo_utils import uuidutils

from nimbus.api import policies
from nimbus.api import util
from nimbus.api.objects import extra_spec_validation
from nimbus.api.objects import flavor_access
from nimbus.api.objects import flavors as flavor_obj
from nimbus.api.schemas import flavors as schema
from nimbus.common.wsgi import json_body


def _get(req, flavor_id):
    try:
        flavor = flavor_obj.get(util.deps(req).api_db, flavor_id)
    except flavor_obj.FlavorNotFound as exc:
        raise util.not_found('Flavor', flavor_id) from exc
    if not flavor_access.visible(flavor, util.ctx(req)):
        raise util.not_found('Flavor', flavor_id)
    return flavor


def view(req, flavor, detail):
    body = {
        'id': flavor['flavorid'],
        'name': flavor['name'],
        'links': util.links(req, 'flavors', flavor['flavorid']),
    }
    version = util.version(req)
    if version >= (2, 55):
        body['description'] = flavor['description']
    if not detail:
        return body
    swap = flavor['swap']
    if version < (2, 75) and not swap:
        swap = ''
    body.update(
        {
            'ram': flavor['memory_mb'],
            'vcpus': flavor['vcpus'],
            'disk': flavor['root_gb'],
            'OS-FLV-EXT-DATA:ephemeral': flavor['ephemeral_gb'],
            'OS-FLV-DISABLED:disabled': flavor['disabled'],
            'os-flavor-access:is_public': flavor['is_public'],
            'swap': swap,
            'rxtx_factor': flavor['rxtx_factor'],
        }
    )
    if version >= (2, 61):
        body['extra_specs'] = flavor['extra_specs']
    return body


def _list(req, resp, detail):
    params = util.query(req, schema.INDEX_QUERY)
    is_public = True
    if util.ctx(req).is_admin:
        raw = params.get('is_public', 'true').lower()
        is_public = (
            None if raw in ('none', 'all') else util.boolish(raw, 'is_public')
        )
    items = flavor_obj.list_all(
        util.deps(req).api_db,
        is_public=is_public,
        min_ram=int(params['minRam']) if 'minRam' in params else None,
        min_disk=int(params['minDisk']) if 'minDisk' in params else None,
        sort_key=params.get('sort_key', 'flavorid'),
        sort_dir=params.get('sort_dir', 'asc'),
        project_id=util.ctx(req).project_id,
    )
    limit = util.limit_of(req, params)
    items, more = util.page(items, lambda f: f['flavorid'], params, limit)
    resp.media = util.paged_body(
        req,
        'flavors',
        [view(req, f, detail) for f in items],
        'flavors',
        detail,
        more,
        lambda: items[-1]['flavorid'],
        params,
    )


def index(req, resp):
    _list(req, resp, detail=False)


def detail(req, resp):
    _list(req, resp, detail=True)


def show(req, resp, flavor_id):
    resp.media = {'flavor': view(req, _get(req, flavor_id), True)}


def _int(value):
    return int(value) if value not in (None, '') else 0


def create(req, resp):
    util.authorize(req, policies.FLAVORS % 'create')
    version = util.version(req)
    body = json_body(
        req, schema.CREATE_V255 if version >= (2, 55) else schema.CREATE
    )['flavor']
    for field in ('ram', 'vcpus', 'disk', 'OS-FLV-EXT-DATA:ephemeral', 'swap'):
        if isinstance(body.get(field), str) and body[field] == '':
            raise util.bad_request(
                'Invalid input for field/attribute %s.' % field
            )
    if int(body['ram']) < 1 or int(body['vcpus']) < 1:
        raise util.bad_request('ram and vcpus must be at least 1.')
    flavorid = body.get('id')
    values = {
        'flavorid': (
            uuidutils.generate_uuid() if flavorid is None else str(flavorid)
        ),
        'name': body['name'],
        'memory_mb': int(body['ram']),
        'vcpus': int(body['vcpus']),
        'root_gb': int(body['disk']),
        'ephemeral_gb': _int(body.get('OS-FLV-EXT-DATA:ephemeral')),
        'swap': _int(body.get('swap')),
        'rxtx_factor': float(body.get('rxtx_factor', 1.0)),
        'is_public': util.boolish(
            body.get('os-flavor-access:is_public', True),
            'os-flavor-access:is_public',
        ),
        'description': body.get('description'),
    }
    try:
        flavor = flavor_obj.create(util.deps(req).api_db, values)
    except flavor_obj.FlavorExists as exc:
        raise util.conflict(str(exc)) from exc
    resp.media = {'flavor': view(req, flavor, True)}


def update(req, resp, flavor_id):
    if util.version(req) < (2, 55):
        raise util.errors.HTTPError(
            405, 'Updating a flavor needs microversion 2.55 or later.'
        )
    util.authorize(req, policies.FLAVORS % 'update')
    body = json_body(req, schema.UPDATE)['flavor']
    try:
        flavor = flavor_obj.update_description(
            util.deps(req).api_db, flavor_id, body['description']
        )
    except flavor_obj.FlavorNotFound as exc:
        raise util.not_found('Flavor', flavor_id) from exc
    resp.media = {'flavor': view(req, flavor, True)}


def delete(req, resp, flavor_id):
    util.authorize(req, policies.FLAVORS % 'delete')
    try:
        flavor_obj.delete(util.deps(req).api_db, flavor_id)
    except flavor_obj.FlavorNotFound as exc:
        raise util.not_found('Flavor', flavor_id) from exc
    resp.status = 202


# -- extra specs -------------------------------------------------------------


def _validated(specs):
    out = {}
    for key, value in specs.items():
        if isinstance(value, bool):
            value = 'true' if value else 'false'
        value = str(value)
        try:
            extra_spec_validation.validate(key, value)
        except extra_spec_validation.InvalidExtraSpec as exc:
            text = str(exc)
            if not text.startswith(key):
                text = '%s: %s' % (key, text)
            raise util.bad_request(
                'Validation failed; extra spec %s' % text
            ) from exc
        out[key] = value
    return out


def _check_groups(req, flavor_id, changes=None, removed=None):
    """The flavor's extra specs as they would be after the change must not
    hold a request group that placement would ignore."""
    specs = dict(_get(req, flavor_id)['extra_specs'])
    specs.update(changes or {})
    if removed is not None:
        specs.pop(removed, None)
    try:
        extra_spec_validation.validate_groups(specs)
    except extra_spec_validation.InvalidExtraSpec as exc:
        raise util.bad_request(
            'Validation failed; extra spec %s' % exc
        ) from exc


def specs_index(req, resp, flavor_id):
    util.authorize(req, policies.EXTRA_SPECS % 'index')
    resp.media = {'extra_specs': _get(req, flavor_id)['extra_specs']}


def specs_create(req, resp, flavor_id):
    util.authorize(req, policies.EXTRA_SPECS % 'create')
    body = json_body(req, schema.EXTRA_SPECS)
    specs = _validated(body['extra_specs'])
    _check_groups(req, flavor_id, specs)
    try:
        flavor_obj.set_extra_specs(util.deps(req).api_db, flavor_id, specs)
    except flavor_obj.FlavorNotFound as exc:
        raise util.not_found('Flavor', flavor_id) from exc
    resp.media = {'extra_specs': specs}


def specs_show(req, resp, flavor_id, key):
    util.authorize(req, policies.EXTRA_SPECS % 'show')
    specs = _get(req, flavor_id)['extra_specs']
    if key not in specs:
        raise util.errors.HTTPError(
            404, 'Flavor %s has no extra specs with key %s.' % (flavor_id, key)
        )
    resp.media = {key: specs[key]}


def specs_update(req, resp, flavor_id, key):
    util.authorize(req, policies.EXTRA_SPECS % 'update')
    body = json_body(req, schema.EXTRA_SPEC_ONE)
    if key not in body:
        raise util.bad_request('Request body and URI mismatch')
    specs = _validated(body)
    _check_groups(req, flavor_id, specs)
    try:
        flavor_obj.set_extra_specs(util.deps(req).api_db, flavor_id, specs)
    except flavor_obj.FlavorNotFound as exc:
        raise util.not_found('Flavor', flavor_id) from exc
    resp.media = specs


def specs_delete(req, resp, flavor_id, key):
    util.authorize(req, policies.EXTRA_SPECS % 'delete')
    _check_groups(req, flavor_id, removed=key)
    try:
        found = flavor_obj.delete_extra_spec(
            util.deps(req).api_db, flavor_id, key
        )
    except flavor_obj.FlavorNotFound as exc:
        raise util.not_found('Flavor', flavor_id) from exc
    if not found:
        raise util.errors.HTTPError(
            404, 'Flavor %s has no extra specs with key %s.' % (flavor_id, key)
        )
    # Nova answers an extra spec's removal with 200 and no body.
    resp.status = 200
