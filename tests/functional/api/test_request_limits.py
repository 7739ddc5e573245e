"""Hard limits on what one request can cost, for both REST APIs:
``[wsgi] max_query_string_length`` and ``[wsgi] max_request_list_length``
(with ``max_request_body_size``, tested in test_body_limit.py), each a 400
naming its option; and the worst request each API still accepts stays
under a memory and CPU budget."""

import json
import resource
import time
import tracemalloc
import uuid

import falcon.testing
import orjson
import pytest

from nimbus.common import db as common_db
from nimbus.placement import wsgi as placement_wsgi
from tests.functional.api import fixtures
from tests.functional.placement import fixtures as placement_fixtures

QUERY = 512
LISTS = 20
JSON = {'Content-Type': 'application/json'}


@pytest.fixture
def api(tmp_path):
    fixture = fixtures.ApiFixture(
        tmp_path,
        overrides={
            'wsgi': {
                'max_query_string_length': QUERY,
                'max_request_list_length': LISTS,
            }
        },
    )
    fixture.add_flavor('1')
    fixture.image = fixture.add_image()
    yield fixture
    common_db.dispose_all()


@pytest.fixture
def placement(tmp_path):
    with placement_fixtures.fresh_database(tmp_path) as url:
        conf = placement_fixtures.make_conf(
            url,
            wsgi={
                'max_query_string_length': QUERY,
                'max_request_list_length': LISTS,
            },
        )
        yield falcon.testing.TestClient(
            placement_wsgi.make_app(conf),
            headers={
                'X-Auth-Token': 'admin',
                'X-Roles': 'admin,service',
                'OpenStack-API-Version': 'placement latest',
            },
        )
        common_db.get_database(url).dispose()


def _detail(r):
    if 'errors' in r.json:
        return r.json['errors'][0]['detail']
    (inner,) = r.json.values()
    return inner['message']


def test_compute_query_string_over_the_limit_names_the_option(api):
    ok = api.client.simulate_get(
        '/v2.1/servers',
        query_string='name=' + 'x' * (QUERY - 5),
        headers=api.headers(),
    )
    assert ok.status_code == 200, ok.text
    r = api.client.simulate_get(
        '/v2.1/servers',
        query_string='name=' + 'x' * (QUERY - 4),
        headers=api.headers(),
    )
    assert r.status_code == 400, r.text
    assert '[wsgi] max_query_string_length' in _detail(r)
    assert str(QUERY) in _detail(r)


def test_placement_query_string_over_the_limit_names_the_option(placement):
    traits = ','.join('CUSTOM_T%d' % i for i in range(100))
    r = placement.simulate_get(
        '/allocation_candidates',
        query_string=('resources=VCPU:1&required=' + traits),
    )
    assert r.status_code == 400, r.text
    assert '[wsgi] max_query_string_length' in _detail(r)


def test_compute_list_over_the_limit_names_the_option_and_where(api):
    events = [
        {'name': 'network-changed', 'server_uuid': str(uuid.uuid4())}
        for _ in range(LISTS + 1)
    ]
    r = api.client.simulate_post(
        '/v2.1/os-server-external-events',
        body=orjson.dumps({'events': events}),
        headers=dict(api.headers('admin'), **JSON),
    )
    assert r.status_code == 400, r.text
    assert '[wsgi] max_request_list_length' in _detail(r)
    assert "'events'" in _detail(r)
    r = api.client.simulate_post(
        '/v2.1/servers',
        body=orjson.dumps(
            {
                'server': {
                    'name': 'vm',
                    'flavorRef': '1',
                    'imageRef': api.image,
                    'metadata': {'k%d' % i: 'v' for i in range(LISTS + 1)},
                }
            }
        ),
        headers=dict(api.headers(), **JSON),
    )
    assert r.status_code == 400, r.text
    assert "'server/metadata'" in _detail(r)
    assert api.conductor.calls == []


@pytest.mark.parametrize('field', ['min_ram', 'min_disk'])
def test_image_sizes_beyond_their_column_are_400(api, field):
    r = api.client.simulate_post(
        '/v2/images',
        body=orjson.dumps({'name': 'big', field: 2**31}),
        headers=dict(api.headers(), **JSON),
    )
    assert r.status_code == 400, r.text
    assert field in _detail(r)
    r = api.client.simulate_post(
        '/v2/images',
        body=orjson.dumps({'name': 'big', field: 2**31 - 1}),
        headers=dict(api.headers(), **JSON),
    )
    assert r.status_code == 201, r.text


def _provider(placement):
    rp = str(uuid.uuid4())
    r = placement.simulate_post(
        '/resource_providers',
        body=orjson.dumps({'name': rp, 'uuid': rp}),
        headers=JSON,
    )
    assert r.status_code == 200, r.text
    return rp


@pytest.mark.parametrize(
    'path,body',
    ids=['aggregates', 'traits', 'resources'],
    argvalues=[
        # aggregates of a provider
        (
            '/resource_providers/{rp}/aggregates',
            lambda n: {
                'aggregates': [str(uuid.uuid4()) for _ in range(n)],
                'resource_provider_generation': 0,
            },
        ),
        # traits of a provider
        (
            '/resource_providers/{rp}/traits',
            lambda n: {
                'traits': ['CUSTOM_T%d' % i for i in range(n)],
                'resource_provider_generation': 0,
            },
        ),
        # resources of one allocation
        (
            '/allocations/{consumer}',
            lambda n: {
                'allocations': {
                    '{rp}': {
                        'resources': {'CUSTOM_R%d' % i: 1 for i in range(n)}
                    }
                },
                'project_id': 'p',
                'user_id': 'u',
                'consumer_generation': None,
            },
        ),
    ],
)
def test_placement_list_over_the_limit_names_the_option(placement, path, body):
    rp = _provider(placement)
    text = orjson.dumps(body(LISTS + 1)).decode().replace('{rp}', rp)
    path = path.replace('{rp}', rp).replace('{consumer}', str(uuid.uuid4()))
    r = placement.simulate_put(path, body=text, headers=JSON)
    assert r.status_code == 400, r.text
    assert '[wsgi] max_request_list_length' in _detail(r)


def test_placement_allocations_per_request_over_the_limit(placement):
    rp = _provider(placement)
    body = {
        str(uuid.uuid4()): {
            'allocations': {rp: {'resources': {'VCPU': 1}}},
            'project_id': 'p',
            'user_id': 'u',
            'consumer_generation': None,
        }
        for _ in range(LISTS + 1)
    }
    r = placement.simulate_post(
        '/allocations', body=orjson.dumps(body), headers=JSON
    )
    assert r.status_code == 400, r.text
    assert '[wsgi] max_request_list_length' in _detail(r)
    assert "'/'" in _detail(r)


def _cost(fn):
    """(peak traced bytes, CPU seconds, max RSS growth in KiB) of fn()."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    cpu = time.process_time()
    try:
        result = fn()
        used = time.process_time() - cpu
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss
    return result, peak, used, grown


# Generous budgets: the point is that no accepted request is unbounded
# (the max_count of 1e+20 took 11 GB in 30 s), not speed.
MEMORY_BUDGET = 256 * 1024 * 1024
CPU_BUDGET = 60.0


@pytest.mark.slow
def test_worst_compute_requests_stay_under_budget(tmp_path):
    """At the default limits: the most servers one request may create
    (max_instances_per_request), and the longest query string with the
    longest list of a body the API reads."""
    fixture = fixtures.ApiFixture(tmp_path)
    fixture.add_flavor('1')
    image = fixture.add_image()
    conf = fixture.conf
    count = conf.api.max_instances_per_request
    # The worst request the quotas allow: lift them (-1 is unlimited).
    for option in ('instances', 'cores', 'ram'):
        conf.set_override(option, -1, group='quota')
    headers = dict(fixture.headers(), **JSON)
    try:
        r, peak, cpu, grown = _cost(
            lambda: fixture.client.simulate_post(
                '/v2.1/servers',
                body=orjson.dumps(
                    {
                        'server': {
                            'name': 'vm',
                            'flavorRef': '1',
                            'imageRef': image,
                            'min_count': count,
                            'max_count': count,
                        }
                    }
                ),
                headers=headers,
            )
        )
        assert r.status_code == 202, r.text
        assert peak < MEMORY_BUDGET and cpu < CPU_BUDGET, (peak, cpu)
        assert grown * 1024 < MEMORY_BUDGET
        # One past it, and its float spelling, are refused at once.
        for value in (count + 1, 99999999999999999999, float(count)):
            r, peak, cpu, _ = _cost(
                lambda value=value: fixture.client.simulate_post(
                    '/v2.1/servers',
                    body=json.dumps(
                        {
                            'server': {
                                'name': 'vm',
                                'flavorRef': '1',
                                'imageRef': image,
                                'max_count': value,
                            }
                        }
                    ),
                    headers=headers,
                )
            )
            assert r.status_code == 400, (value, r.text)
            assert peak < 16 * 1024 * 1024, (value, peak)
        query = 'name=' + 'x' * (conf.wsgi.max_query_string_length - 5)
        r, peak, cpu, _ = _cost(
            lambda: fixture.client.simulate_get(
                '/v2.1/servers/detail',
                query_string=query,
                headers=fixture.headers('admin'),
            )
        )
        assert r.status_code == 200, r.text
        assert peak < MEMORY_BUDGET and cpu < CPU_BUDGET, (peak, cpu)
    finally:
        common_db.dispose_all()


def test_worst_placement_requests_stay_under_budget(tmp_path):
    """At the default limits: allocation candidates for a query string of
    the longest length made of request groups and traits, and the most
    allocations one POST /allocations may carry."""
    with placement_fixtures.fresh_database(tmp_path) as url:
        conf = placement_fixtures.make_conf(url)
        client = falcon.testing.TestClient(
            placement_wsgi.make_app(conf),
            headers={
                'X-Auth-Token': 'admin',
                'X-Roles': 'admin,service',
                'OpenStack-API-Version': 'placement latest',
            },
        )
        rps = []
        for _i in range(20):
            rp = _provider(client)
            r = client.simulate_put(
                '/resource_providers/%s/inventories' % rp,
                headers=JSON,
                body=orjson.dumps(
                    {
                        'resource_provider_generation': 0,
                        'inventories': {
                            'VCPU': {'total': 100000},
                            'MEMORY_MB': {'total': 100000},
                        },
                    }
                ),
            )
            assert r.status_code == 200, r.text
            rps.append(rp)
        parts, group = [], 0
        limit = conf.wsgi.max_query_string_length
        while True:
            part = 'resources%d=VCPU:1,MEMORY_MB:1&required%d=!CUSTOM_X%d' % (
                group,
                group,
                group,
            )
            if len('&'.join(parts + [part])) > limit:
                break
            parts.append(part)
            group += 1
        query = '&'.join(parts + ['group_policy=none', 'limit=1000'])[:limit]
        query = query[: query.rindex('&')]
        r, peak, cpu, grown = _cost(
            lambda: client.simulate_get(
                '/allocation_candidates', query_string=query
            )
        )
        assert r.status_code in (200, 400), r.text
        assert peak < MEMORY_BUDGET and cpu < CPU_BUDGET, (group, peak, cpu)
        lists = conf.wsgi.max_request_list_length
        body = {
            str(uuid.uuid4()): {
                'allocations': {rps[i % len(rps)]: {'resources': {'VCPU': 1}}},
                'project_id': 'p',
                'user_id': 'u',
                'consumer_generation': None,
                'consumer_type': 'INSTANCE',
            }
            for i in range(lists)
        }
        r, peak, cpu, grown = _cost(
            lambda: client.simulate_post(
                '/allocations', body=orjson.dumps(body), headers=JSON
            )
        )
        assert r.status_code == 204, r.text
        assert peak < MEMORY_BUDGET and cpu < CPU_BUDGET, (peak, cpu)
        assert grown * 1024 < MEMORY_BUDGET
        common_db.get_database(url).dispose()
