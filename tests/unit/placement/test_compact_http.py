"""The compact answer over HTTP: asked for by a header, said by a header.

``X-Nimbus-Candidates: compact-1`` at 1.34 or later gets the compact body
and the same header back; without it (every OpenStack client) or below
1.34 the answer is Placement's standard body, with no such header. The
scheduler's client reads either.
"""

import orjson
import requests

from nimbus.common import config
from nimbus.common.clients import compact_candidates
from nimbus.common.clients import placement as placement_client
from nimbus.placement import db as placement_db
from nimbus.placement import direct
from nimbus.placement import wsgi

URL = 'http://127.0.0.1:9'
PROVIDERS = ['8a3c4d2e-1b5f-4e6a-9c7d-0f1e2d3c4b5%d' % i for i in range(3)]


def _headers(version='1.39', **extra):
    headers = {
        'X-Auth-Token': 'admin',
        'X-Roles': 'admin,service',
        'OpenStack-API-Version': 'placement %s' % version,
    }
    headers.update(extra)
    return headers


def _placement(tmp_path):
    url = 'sqlite:///%s/placement.sqlite' % tmp_path
    placement_db.sync(url)
    conf = config.build_conf(
        [], overrides={'placement_database': {'connection': url}}
    )
    app = wsgi.make_app(conf, auth_strategy='noauth2')
    session = direct.mount(requests.Session(), URL, app)
    for i, rp in enumerate(PROVIDERS):
        made = session.post(
            URL + '/resource_providers',
            json={'name': 'cn%d' % i, 'uuid': rp},
            headers=_headers(),
        )
        assert made.status_code == 200, made.text
        inv = session.put(
            URL + '/resource_providers/%s/inventories' % rp,
            json={
                'resource_provider_generation': 0,
                'inventories': {
                    'VCPU': {'total': 8 + i},
                    'MEMORY_MB': {'total': 4096},
                },
            },
            headers=_headers(),
        )
        assert inv.status_code == 200, inv.text
    return session


QUERY = [('resources', 'VCPU:1,MEMORY_MB:256')]


def test_only_the_header_gets_the_compact_body(tmp_path):
    session = _placement(tmp_path)
    plain = session.get(
        URL + '/allocation_candidates', params=QUERY, headers=_headers()
    )
    brief = session.get(
        URL + '/allocation_candidates',
        params=QUERY,
        headers=_headers(**{'X-Nimbus-Candidates': 'compact-1'}),
    )
    old = session.get(
        URL + '/allocation_candidates',
        params=QUERY,
        headers=_headers('1.33', **{'X-Nimbus-Candidates': 'compact-1'}),
    )
    assert plain.status_code == brief.status_code == old.status_code == 200
    assert 'X-Nimbus-Candidates' not in plain.headers
    assert 'X-Nimbus-Candidates' not in old.headers
    assert brief.headers['X-Nimbus-Candidates'] == 'compact-1'
    standard = plain.json()
    assert set(standard) == {'allocation_requests', 'provider_summaries'}
    assert len(standard['allocation_requests']) == 3
    assert 'compact' not in old.json()
    body = compact_candidates.expand(orjson.loads(brief.content))
    _assert_same_answer(body, standard)


def _assert_same_answer(body, standard):
    """An expanded compact ``body`` holds exactly the standard answer."""
    assert (
        compact_candidates.full_requests(body)
        == (standard['allocation_requests'])
    )
    assert (
        dict(body['provider_summaries'].items())
        == (standard['provider_summaries'])
    )


def test_the_client_reads_the_compact_answer(tmp_path):
    session = _placement(tmp_path)
    client = placement_client.PlacementClient(URL, session=session)
    standard = client.get_allocation_candidates(None, QUERY)
    body = client.get_compact_candidates(None, QUERY)
    assert body['flat_request'] is not None
    assert all(a.__class__ is str for a in body['allocation_requests'])
    _assert_same_answer(body, standard)
