"""/os-keypairs: a user's key pairs (generated or imported), in Nova's
shapes at each microversion.

Below 2.2 a create answers 200 and a delete 202, from 2.2 201 and 204 and
every key pair shows its ``type``. From 2.10 an admin names another user
with ``user_id`` (in the body of a create, the query of the others); from
2.35 the list pages with ``limit`` and ``marker``; from 2.92 a key pair is
imported only (``public_key`` is required). Each user may hold the
project's ``key_pairs`` quota of them.
"""

from nimbus.api import policies_access
from nimbus.api import util
from nimbus.api.objects import keypair_crypto
from nimbus.api.objects import keypairs as keypair_obj
from nimbus.api.objects import quotas
from nimbus.api.schemas import keypairs as schema
from nimbus.common.wsgi import errors
from nimbus.common.wsgi import json_body

RULE = policies_access.KEYPAIRS


def _user(req, params, action):
    """The user acted for: ``user_id`` (2.10) or the caller; the policy
    decides whether the caller may."""
    ctx = util.ctx(req)
    user_id = params.get('user_id') or ctx.user_id
    util.authorize(
        req, RULE % action, {'user_id': user_id, 'project_id': ctx.project_id}
    )
    return user_id


def view(req, keypair, full=False):
    """A key pair as a list shows it, or (``full``) as a show does."""
    body = {
        'name': keypair['name'],
        'public_key': keypair['public_key'],
        'fingerprint': keypair['fingerprint'],
    }
    if util.version(req) >= (2, 2):
        body['type'] = keypair['type']
    if full:
        body.update(
            {
                'user_id': keypair['user_id'],
                'id': keypair['id'],
                'deleted': False,
                'created_at': util.isotime(keypair['created_at']),
                'updated_at': util.isotime(keypair['updated_at']),
                'deleted_at': None,
            }
        )
    return body


def index(req, resp):
    version = util.version(req)
    params = util.query(req, schema.query_schema(version, listing=True))
    user_id = _user(req, params, 'index')
    items = keypair_obj.list_for_user(util.deps(req).api_db, user_id)
    more = False
    if version >= (2, 35):
        limit = util.limit_of(req, params)
        items, more = util.page(items, lambda k: k['name'], params, limit)
    body = {'keypairs': [{'keypair': view(req, k)} for k in items]}
    if more and items:
        body['keypairs_links'] = util.next_link(
            req, 'os-keypairs', items[-1]['name'], params
        )
    resp.media = body


def _get(req, name, user_id):
    try:
        return keypair_obj.get(util.deps(req).api_db, user_id, name)
    except keypair_obj.KeyPairNotFound as exc:
        raise errors.HTTPError(404, str(exc)) from exc


def show(req, resp, keypair_name):
    params = util.query(req, schema.query_schema(util.version(req)))
    user_id = _user(req, params, 'show')
    keypair = _get(req, keypair_name, user_id)
    resp.media = {'keypair': view(req, keypair, full=True)}


def delete(req, resp, keypair_name):
    params = util.query(req, schema.query_schema(util.version(req)))
    user_id = _user(req, params, 'delete')
    try:
        keypair_obj.delete(util.deps(req).api_db, user_id, keypair_name)
    except keypair_obj.KeyPairNotFound as exc:
        raise errors.HTTPError(404, str(exc)) from exc
    resp.status = 204 if util.version(req) >= (2, 2) else 202


def _check_name(version, name):
    if set(name) - schema.name_chars(version):
        raise util.bad_request(
            'Keypair data is invalid: Keypair name contains unsafe characters'
        )


def _check_quota(req, user_id):
    """Each user holds at most the project's ``key_pairs`` limit."""
    deps = util.deps(req)
    limit = quotas.project_limits(
        deps.conf, deps.api_db, util.ctx(req).project_id
    )['key_pairs']
    used = keypair_obj.count_for_user(deps.api_db, user_id)
    if limit >= 0 and used + 1 > limit:
        raise errors.forbidden('Maximum number of key pairs exceeded')


def _material(req, body, key_type, user_id):
    """``(private_key or None, public_key, fingerprint)``."""
    public_key = body.get('public_key')
    if public_key is None:
        if key_type == keypair_crypto.X509:
            return keypair_crypto.generate_x509(
                user_id, util.ctx(req).project_id
            )
        return keypair_crypto.generate_ssh()
    try:
        fingerprint = keypair_crypto.fingerprint(key_type, public_key)
    except keypair_crypto.InvalidKey as exc:
        raise util.bad_request(
            'Keypair data is invalid: failed to generate fingerprint'
        ) from exc
    return None, public_key.strip(), fingerprint


def create(req, resp):
    version = util.version(req)
    body = json_body(req, schema.create_schema(version))['keypair']
    user_id = _user(req, body, 'create')
    name = body['name']
    _check_name(version, name)
    key_type = body.get('type', keypair_crypto.SSH)
    _check_quota(req, user_id)
    private_key, public_key, fingerprint = _material(
        req, body, key_type, user_id
    )
    try:
        keypair = keypair_obj.create(
            util.deps(req).api_db,
            {
                'name': name,
                'user_id': user_id,
                'fingerprint': fingerprint,
                'public_key': public_key,
                'type': key_type,
            },
        )
    except keypair_obj.KeyPairExists as exc:
        raise util.conflict(str(exc)) from exc
    out = view(req, keypair)
    out['user_id'] = user_id
    if private_key is not None:
        out['private_key'] = private_key
    resp.status = 201 if version >= (2, 2) else 200
    resp.media = {'keypair': out}
