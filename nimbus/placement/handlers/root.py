"""GET /: version discovery (no authentication needed)."""

import orjson

MIN_VERSION = '1.0'
MAX_VERSION = '1.39'


def home(state, req, resp):
    body = {'versions': [{'id': 'v%s' % MIN_VERSION,
                          'max_version': MAX_VERSION,
                          'min_version': MIN_VERSION,
                          'status': 'CURRENT',
                          'links': [{'rel': 'self', 'href': ''}]}]}
    resp.data = orjson.dumps(body)
    resp.content_type = 'application/json'
