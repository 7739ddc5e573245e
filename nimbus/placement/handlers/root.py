"""GET /: version discovery (no authentication needed)."""

import orjson

from nimbus.placement.handlers import util

MIN_VERSION = '1.0'
MAX_VERSION = '1.39'


def home(state, req, resp):
    body = {
        'versions': [
            {
                'id': 'v%s' % MIN_VERSION,
                'max_version': MAX_VERSION,
                'min_version': MIN_VERSION,
                'status': 'CURRENT',
                'links': [{'rel': 'self', 'href': ''}],
            }
        ]
    }
    # cache-control and last-modified from 1.15, as on every GET
    util.send_json(req, resp, orjson.dumps(body))
