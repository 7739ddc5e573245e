"""Version discovery: ``GET /``, ``GET /v2.1`` and ``GET /v2`` (the
legacy v2.0 entry of ``GET /``, whose link Tempest follows)."""

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


def _v20(req, detail=False):
    """The legacy v2.0 entry Nova lists beside v2.1 (no microversions:
    empty version and min_version). Nimbus serves only /v2.1; ``GET /v2/``
    answers this entry as Nova's does (with its describedby link)."""
    links = [{'rel': 'self', 'href': util.base_url(req) + '/v2/'}]
    if detail:
        links.append(
            {
                'rel': 'describedby',
                'type': 'text/html',
                'href': 'https://docs.openstack.org/',
            }
        )
    return {
        'id': 'v2.0',
        'status': 'SUPPORTED',
        'version': '',
        'min_version': '',
        'updated': '2011-01-21T11:33:21Z',
        'links': links,
    }


def versions(req, resp):
    resp.media = {'versions': [_v20(req), _v21(req)]}


def version_v21(req, resp):
    body = _v21(req)
    body['media-types'] = MEDIA_TYPES
    resp.media = {'version': body}


def version_v20(req, resp):
    body = _v20(req, detail=True)
    body['media-types'] = [
        {
            'base': 'application/json',
            'type': 'application/vnd.openstack.compute+json;version=2',
        }
    ]
    resp.media = {'version': body}
