"""``GET /identity`` and ``GET /identity/v3``: an identity version document
for clients of a noauth2 cloud (development only; no Keystone).

The openstack CLI asks the identity service for its version before some
commands (``server list`` insists on identity v3) even when it will never
call it. With ``[api] auth_strategy = noauth2`` these paths answer a
Keystone-shaped version document, so a ``clouds.yaml`` can name
``<nimbus-api>/identity/v3`` as its ``identity_endpoint_override``. Nothing
else of the identity API exists: lookups of projects or users by name fail.
With keystone these paths are 404: the real Keystone answers them.
"""

from nimbus.api import util
from nimbus.common.wsgi import errors

PREFIX = '/identity'
PATHS = (PREFIX, PREFIX + '/', PREFIX + '/v3', PREFIX + '/v3/')


def _v3(req):
    return {
        'id': 'v3.14',
        'status': 'stable',
        'updated': '2020-04-07T00:00:00Z',
        'links': [
            {'rel': 'self', 'href': util.base_url(req) + PREFIX + '/v3/'}
        ],
        'media-types': [
            {
                'base': 'application/json',
                'type': 'application/vnd.openstack.identity-v3+json',
            }
        ],
    }


def version(req, resp):
    if util.deps(req).conf.api.auth_strategy != 'noauth2':
        raise errors.HTTPError(404, 'The resource could not be found.')
    if req.path.rstrip('/').endswith('/v3'):
        resp.media = {'version': _v3(req)}
    else:
        resp.media = {'versions': {'values': [_v3(req)]}}
