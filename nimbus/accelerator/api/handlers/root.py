"""Version discovery: ``GET /`` and ``GET /v2`` (no authentication)."""

from nimbus.accelerator.api.handlers import util

MIN_VERSION = '2.0'
MAX_VERSION = '2.3'


def _version(req):
    return {
        'id': 'v2.0',
        'status': 'CURRENT',
        'min_version': MIN_VERSION,
        'max_version': MAX_VERSION,
        'links': [{'href': util.base_url(req) + '/v2', 'rel': 'self'}],
    }


def home(state, req, resp):
    version = _version(req)
    util.send(
        resp,
        {
            'name': 'Nimbus accelerator API',
            'description': 'Device profiles, accelerator requests '
            'and devices (the OpenStack Cyborg v2 '
            'API).',
            'default_version': version,
            'versions': [version],
        },
    )


def v2(state, req, resp):
    base = util.base_url(req) + '/v2'
    body = _version(req)
    body['links'] = [{'href': base, 'rel': 'self'}]
    for noun in (
        'device_profiles',
        'accelerator_requests',
        'devices',
        'deployables',
    ):
        body[noun] = [{'href': '%s/%s' % (base, noun), 'rel': 'self'}]
    util.send(resp, body)
