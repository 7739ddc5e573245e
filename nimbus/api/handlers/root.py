"""Version discovery: ``GET /`` and ``GET /v2.1``."""

from nimbus.api import util
from nimbus.api import versions as api_versions

UPDATED = '2013-07-23T11:33:21Z'
MEDIA_TYPES = [
    {
        'base': 'application/json',
        'type': 'application/vnd.openstack.compute+json;version=2.1',
    }
]


def _v21(req):
    return {
        'id': 'v2.1',
        'status': 'CURRENT',
        'version': api_versions.MAX_VERSION,
        'min_version': api_versions.MIN_VERSION,
        'updated': UPDATED,
        'links': [
            {'rel': 'self', 'href': util.base_url(req) + '/v2.1/'},
            {
                'rel': 'describedby',
                'type': 'text/html',
                'href': 'https://docs.openstack.org/',
            },
        ],
    }


def _v20(req):
    """The legacy v2.0 entry Nova lists beside v2.1 (no microversions:
    empty version and min_version). Nimbus serves only /v2.1."""
    return {
        'id': 'v2.0',
        'status': 'SUPPORTED',
        'version': '',
        'min_version': '',
        'updated': '2011-01-21T11:33:21Z',
        'links': [{'rel': 'self', 'href': util.base_url(req) + '/v2/'}],
    }


def versions(req, resp):
    resp.media = {'versions': [_v20(req), _v21(req)]}


def version_v21(req, resp):
    body = _v21(req)
    body['media-types'] = MEDIA_TYPES
    resp.media = {'version': body}
