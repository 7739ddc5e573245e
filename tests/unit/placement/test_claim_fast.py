"""A new consumer's claim checked against the snapshot (objects/claim.py).

The same requests go to two placements on fresh databases, one with the
fast claim and one without (its plan always declines): every answer and
everything both databases end with must be the same, and the snapshot
each cache holds afterwards must be what a fresh load reads. The fast
path must also really be taken for the claims it is meant for.
"""

import contextlib

import pytest
import requests
import sqlalchemy as sa

from nimbus.common import config
from nimbus.common import db as common_db
from nimbus.placement import db as placement_db
from nimbus.placement import direct
from nimbus.placement import wsgi
from nimbus.placement.db import models as m
from nimbus.placement.objects import claim
from nimbus.placement.objects import snapshot as snapshot_mod
from tests.functional.placement import fixtures

URL = 'http://127.0.0.1:9'
HEADERS = {
    'X-Auth-Token': 'admin',
    'X-Roles': 'admin,service',
    'OpenStack-API-Version': 'placement 1.39',
}
HOSTS = ['0b1c2d3e-0000-4000-8000-00000000000%d' % i for i in range(4)]
CHILD = '0b1c2d3e-0000-4000-8000-0000000000c1'
FLAVOR = {'VCPU': 2, 'MEMORY_MB': 1024}


def _consumer(i):
    return '5e6f7a8b-0000-4000-8000-%012d' % i


@contextlib.contextmanager
def _placement(tmp_path, name):
    path = tmp_path / name
    path.mkdir()
    with fixtures.fresh_database(path) as url:
        placement_db.sync(url)
        conf = config.build_conf(
            [], overrides={'placement_database': {'connection': url}}
        )
        app = wsgi.make_app(conf, auth_strategy='noauth2')
        session = direct.mount(requests.Session(), URL, app)
        try:
            yield app, session, url
        finally:
            common_db.get_database(url).dispose()


def _call(session, method, path, body=None):
    resp = session.request(method, URL + path, json=body, headers=HEADERS)
    try:
        content = resp.json()
    except ValueError:
        content = resp.text
    if isinstance(content, dict):
        for error in content.get('errors', ()):
            error.pop('request_id', None)
    return resp.status_code, content


def _claim_body(rp, resources, generation=None, project='p'):
    return {
        'allocations': {rp: {'resources': resources}},
        'project_id': project,
        'user_id': 'u',
        'consumer_generation': generation,
        'consumer_type': 'INSTANCE',
    }


def _script(session):
    """The requests both placements get; yields each answer."""
    for i, rp in enumerate(HOSTS):
        yield _call(
            session,
            'POST',
            '/resource_providers',
            {'name': 'h%d' % i, 'uuid': rp},
        )
        yield _call(
            session,
            'PUT',
            '/resource_providers/%s/inventories' % rp,
            {
                'resource_provider_generation': 0,
                'inventories': {
                    'VCPU': {'total': 4, 'max_unit': 4},
                    'MEMORY_MB': {'total': 4096, 'step_size': 256},
                },
            },
        )
    yield _call(session, 'PUT', '/resource_classes/CUSTOM_GPU')
    yield _call(
        session,
        'POST',
        '/resource_providers',
        {'name': 'child', 'uuid': CHILD, 'parent_provider_uuid': HOSTS[3]},
    )
    yield _call(
        session,
        'PUT',
        '/resource_providers/%s/inventories' % CHILD,
        {
            'resource_provider_generation': 0,
            'inventories': {'CUSTOM_GPU': {'total': 1}},
        },
    )
    query = '/allocation_candidates?resources=VCPU:2,MEMORY_MB:1024'
    yield _call(session, 'GET', query)
    # fits (fast), twice on one host, then no room left there
    for i in range(3):
        yield _call(
            session,
            'PUT',
            '/allocations/%s' % _consumer(i),
            _claim_body(HOSTS[0], FLAVOR),
        )
    yield _call(session, 'GET', query)
    # the same consumer again (exists: declined, then 409), and with
    # its generation (a move: the ordinary path)
    yield _call(
        session,
        'PUT',
        '/allocations/%s' % _consumer(0),
        _claim_body(HOSTS[1], FLAVOR),
    )
    yield _call(
        session,
        'PUT',
        '/allocations/%s' % _consumer(0),
        _claim_body(HOSTS[1], FLAVOR, generation=1),
    )
    # step, max_unit, an unknown class, an unknown provider, no inventory
    bad = [
        (HOSTS[2], {'VCPU': 1, 'MEMORY_MB': 100}),
        (HOSTS[2], {'VCPU': 5}),
        (HOSTS[2], {'CUSTOM_NOPE': 1}),
        ('0b1c2d3e-0000-4000-8000-0000000000ff', {'VCPU': 1}),
        (HOSTS[2], {'CUSTOM_GPU': 1}),
    ]
    for j, (rp, res) in enumerate(bad):
        yield _call(
            session,
            'PUT',
            '/allocations/%s' % _consumer(10 + j),
            _claim_body(rp, res),
        )
    # two providers of one tree, then POST of one and of two consumers
    yield _call(
        session,
        'PUT',
        '/allocations/%s' % _consumer(20),
        {
            'allocations': {
                HOSTS[3]: {'resources': {'VCPU': 1}},
                CHILD: {'resources': {'CUSTOM_GPU': 1}},
            },
            'project_id': 'p',
            'user_id': 'u',
            'consumer_generation': None,
            'consumer_type': 'MIGRATION',
        },
    )
    yield _call(
        session,
        'POST',
        '/allocations',
        {_consumer(21): _claim_body(HOSTS[2], FLAVOR)},
    )
    yield _call(
        session,
        'POST',
        '/allocations',
        {
            _consumer(22): _claim_body(HOSTS[2], {'VCPU': 1}),
            _consumer(23): _claim_body(HOSTS[1], {'VCPU': 1}),
        },
    )
    # a structure write the cache has not seen yet: the claim after it
    # must not trust the snapshot
    yield _call(
        session,
        'PUT',
        '/resource_providers/%s/inventories' % HOSTS[1],
        {
            'resource_provider_generation': 3,
            'inventories': {
                'VCPU': {'total': 1},
                'MEMORY_MB': {'total': 4096, 'step_size': 256},
            },
        },
    )
    yield _call(
        session,
        'PUT',
        '/allocations/%s' % _consumer(30),
        _claim_body(HOSTS[1], FLAVOR),
    )
    yield _call(session, 'GET', query)
    yield _call(
        session,
        'PUT',
        '/allocations/%s' % _consumer(31),
        _claim_body(HOSTS[2], {'VCPU': 1}, project='q'),
    )
    yield _call(session, 'DELETE', '/allocations/%s' % _consumer(1))
    yield _call(
        session,
        'PUT',
        '/allocations/%s' % _consumer(1),
        _claim_body(HOSTS[0], FLAVOR),
    )
    yield _call(session, 'GET', query)
    for rp in HOSTS + [CHILD]:
        yield _call(session, 'GET', '/resource_providers/%s' % rp)
        yield _call(session, 'GET', '/resource_providers/%s/usages' % rp)
    for i in (0, 1, 2, 20, 21, 22, 30, 31):
        yield _call(session, 'GET', '/allocations/%s' % _consumer(i))


def _tables(url):
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            out = {}
            for table in (m.STATE, m.RP, m.ALLOC, m.CONSUMER, m.CTYPE):
                cols = [
                    c
                    for c in table.c
                    if c.name not in ('created_at', 'updated_at')
                ]
                rows = conn.execute(sa.select(*cols)).all()
                out[table.name] = sorted(tuple(r) for r in rows)
            return out
    finally:
        engine.dispose()


def _provider_state(snap):
    return {
        u: (p.generation, p.usages, p.inventories)
        for u, p in snap.providers.items()
    }


def test_fast_claims_answer_and_write_what_the_ordinary_path_does(
    tmp_path, monkeypatch
):
    fast_writes = []
    real_write = claim._write

    def counted(conn, req, *args):
        fast_writes.append(req.uuid)
        return real_write(conn, req, *args)

    monkeypatch.setattr(claim, '_write', counted)
    with _placement(tmp_path, 'fast') as (app, session, url):
        fast = list(_script(session))
        fast_tables = _tables(url)
        cache = app.placement_state.cache
        followed = _provider_state(cache.get())
        fresh = snapshot_mod.SnapshotCache(app.placement_state.pdb)
        assert followed == _provider_state(fresh.get())
    # the claims that fit a current snapshot, and the one found to exist
    # (declined after its bump, rolled back)
    assert fast_writes == [
        _consumer(0),
        _consumer(1),
        _consumer(0),
        _consumer(20),
        _consumer(21),
        _consumer(31),
        _consumer(1),
    ]

    monkeypatch.setattr(claim, 'plan', lambda requests, view: None)
    fast_writes.clear()
    with _placement(tmp_path, 'ordinary') as (app, session, url):
        ordinary = list(_script(session))
        ordinary_tables = _tables(url)
    assert fast_writes == []
    for step, (a, b) in enumerate(zip(fast, ordinary, strict=True)):
        assert a == b, 'answer %d differs' % step
    assert fast_tables == ordinary_tables
    statuses = [s for s, _ in fast]
    assert statuses.count(409) >= 2 and statuses.count(400) >= 2


def test_a_stale_view_takes_the_ordinary_path(tmp_path, monkeypatch):
    with _placement(tmp_path, 'stale') as (app, session, _url):
        steps = iter(_script(session))
        for _ in range(12):  # up to the first GET of candidates
            next(steps)
        cache = app.placement_state.cache
        view = cache.claim_view()
        assert view is not None
        # another process's write: the counters move past the view
        app.placement_state.pdb.write(
            lambda conn: None, structure=False, usage=True
        )
        monkeypatch.setattr(cache, 'claim_view', lambda: view)
        called = []
        real = claim.allocation.replace_noting
        monkeypatch.setattr(
            claim.allocation,
            'replace_noting',
            lambda conn, reqs: called.append(1) or real(conn, reqs),
        )
        status, _ = _call(
            session,
            'PUT',
            '/allocations/%s' % _consumer(0),
            _claim_body(HOSTS[0], FLAVOR),
        )
        assert status == 204 and called == [1]


@pytest.mark.parametrize('generation', [None, 'absent'])
def test_plan_declines_what_it_cannot_check(generation):
    from nimbus.placement.candidates import model
    from nimbus.placement.objects import allocation

    inv = model.Inventory(total=4, max_unit=4)
    p = model.Provider('a', 'a', 7, None, 'a', {'VCPU': inv}, {}, set(), set())
    view = claim.View((1, 1), {'a': 5}, {5: p}, {'VCPU': 0})
    gen = allocation.NO_GENERATION if generation == 'absent' else None
    req = allocation.Request('c', {'a': {'VCPU': 4}}, generation=gen)
    assert claim.plan([req], view) == ([(5, 0, 4)], {5: (7, {0: 4})})
    assert claim.plan([req, req], view) is None
    assert claim.plan([req], None) is None
    for allocs in ({}, {'a': {'VCPU': 5}}, {'b': {'VCPU': 1}}):
        assert (
            claim.plan([allocation.Request('c', allocs, generation=gen)], view)
            is None
        )
    assert (
        claim.plan(
            [allocation.Request('c', {'a': {'VCPU': 1}}, generation=3)], view
        )
        is None
    )
