"""Version discovery: ``GET /``, ``GET /v2`` and ``GET /v2/`` (no
authentication), shaped as Cyborg's: the root lists version ``v2`` with
a self link to ``.../v2``; ``/v2`` describes ``v2.0`` with a self link to
``.../v2/``. Links follow how the caller reached the API (at the root or
under ``/accelerator``)."""

from nimbus.accelerator.api.handlers import util

MIN_VERSION = '2.0'
MAX_VERSION = '2.3'


def _version(req, version_id, href):
    return {
        'id': version_id,
        'status': 'CURRENT',
        'min_version': MIN_VERSION,
        'max_version': MAX_VERSION,
        'links': [{'href': href, 'rel': 'self'}],
    }


def home(state, req, resp):
    version = _version(req, 'v2', util.base_url(req) + '/v2')
    util.send(
        resp,
        {
            'name': 'Nimbus accelerator API',
            'description': 'Device profiles, accelerator requests, '
            'devices, deployables and attributes (the OpenStack Cyborg '
            'v2 API).',
            'default_version': version,
            'versions': [version],
        },
    )


def v2(state, req, resp):
    util.send(resp, _version(req, 'v2.0', util.base_url(req) + '/v2/'))
