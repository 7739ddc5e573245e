"""No route answers 500 to malformed input: every one answers 4xx JSON."""

import pytest

from nimbus.api import handler
from nimbus.common import db as common_db
from tests.functional.api import fixtures

_IDS = {
    'server_id': 'x',
    'flavor_id': 'x',
    'key': 'k',
    'service_id': 'x',
    'hypervisor_id': 'x',
    'aggregate_id': '1',
    'group_id': 'x',
    'image_id': 'x',
}
_BODIES = [
    None,
    'null',
    '[]',
    '"x"',
    '{"a": 1}',
    '{',
    '{"server": []}',
    '{"flavor": {"name": null}}',
    '{"events": "x"}',
    '1e999',
]
_QUERIES = [
    '',
    'limit=abc',
    'marker=zz',
    'limit=-5',
    'all_tenants=maybe',
    'status=odd&name=(',
    'with_servers=%ff',
    'is_public=maybe',
]


# The dashboard's event stream takes no input; without a notification
# transport (this fixture has none) it answers 503, and with one it streams
# until its lifetime ends. tests/functional/test_dashboard.py covers it.
_NO_INPUT = {'/dashboard/api/events'}


def _cases():
    for path, methods in handler.ROUTES:
        if path in _NO_INPUT:
            continue
        url = path
        for name, value in _IDS.items():
            url = url.replace('{%s}' % name, value)
        for method in methods:
            if method in ('GET', 'DELETE'):
                for q in _QUERIES:
                    yield method, url, q, None
            else:
                for body in _BODIES:
                    yield method, url, '', body


@pytest.fixture(scope='module')
def shared_api(tmp_path_factory):
    api = fixtures.ApiFixture(tmp_path_factory.mktemp('bad-input'))
    api.add_flavor('x')
    api.add_compute('host1')
    yield api
    common_db.dispose_all()


@pytest.mark.matrix
@pytest.mark.parametrize('method, url, query, body', list(_cases()))
@pytest.mark.parametrize('user', ['admin', 'demo'])
def test_never_500(shared_api, method, url, query, body, user):
    api = shared_api
    headers = api.headers(user, version='latest')
    if body is not None:
        headers['Content-Type'] = 'application/json'
    r = api.client.simulate_request(
        method, url, query_string=query, body=body, headers=headers
    )
    assert r.status_code < 500, (r.status_code, r.text)
    if r.status_code >= 400:
        assert r.json and list(r.json.values())[0]['code'] == r.status_code
