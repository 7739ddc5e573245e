"""``direct.tree_writer``: many new providers with their inventories and
traits in one write, leaving placement as the one-request-at-a-time path
(POST the provider, PUT its inventory, PUT its traits) leaves it: the same
providers, inventories, traits and generations through the API."""

import pytest

from nimbus.common import config
from nimbus.placement import db as placement_db
from nimbus.placement import direct
from nimbus.placement import exception
from nimbus.placement import wsgi

ROOT = '11111111-1111-4111-8111-111111111111'
CHILD = '22222222-2222-4222-8222-222222222222'
BARE = '33333333-3333-4333-8333-333333333333'
VCPU = {
    'VCPU': {
        'total': 8,
        'reserved': 0,
        'min_unit': 1,
        'max_unit': 8,
        'step_size': 1,
        'allocation_ratio': 16.0,
    }
}
FPGA = {'CUSTOM_FPGA': {'total': 1, 'max_unit': 1}}


@pytest.fixture
def app(tmp_path):
    url = 'sqlite:///%s/placement.sqlite' % tmp_path
    placement_db.sync(url)
    conf = config.build_conf(
        [], overrides={'placement_database': {'connection': url}}
    )
    return wsgi.make_app(conf, auth_strategy='noauth2')


def _session(app):
    return direct.DirectSession(app, microversion='1.39')


def _tree(session, root):
    """``{name: (generation, parent, inventories, traits)}`` of a tree."""
    out = {}
    listed = session.get('/resource_providers', params={'in_tree': root})
    for p in listed.json()['resource_providers']:
        base = '/resource_providers/%s' % p['uuid']
        out[p['name']] = (
            p['generation'],
            p['parent_provider_uuid'],
            session.get(base + '/inventories').json()['inventories'],
            sorted(session.get(base + '/traits').json()['traits']),
        )
    return out


def _by_requests(session, providers):
    for p in providers:
        body = {'uuid': p['uuid'], 'name': p['name']}
        if p['parent_provider_uuid']:
            body['parent_provider_uuid'] = p['parent_provider_uuid']
        assert session.post('/resource_providers', json=body).ok
        base = '/resource_providers/%s' % p['uuid']
        generation = 0
        if p['inventories']:
            answer = session.put(
                base + '/inventories',
                json={
                    'resource_provider_generation': generation,
                    'inventories': p['inventories'],
                },
            )
            assert answer.ok, answer.text
            generation = answer.json()['resource_provider_generation']
        if p['traits']:
            answer = session.put(
                base + '/traits',
                json={
                    'resource_provider_generation': generation,
                    'traits': p['traits'],
                },
            )
            assert answer.ok, answer.text


def _providers(prefix=''):
    return [
        {
            'uuid': ROOT,
            'name': prefix + 'cn1',
            'parent_provider_uuid': None,
            'inventories': VCPU,
            'traits': ['COMPUTE_STATUS_DISABLED', 'HW_CPU_X86_AVX2'],
        },
        {
            'uuid': CHILD,
            'name': prefix + 'cn1_fpga',
            'parent_provider_uuid': ROOT,
            'inventories': FPGA,
            'traits': ['CUSTOM_OWNER'],
        },
        {
            'uuid': BARE,
            'name': prefix + 'cn1_bare',
            'parent_provider_uuid': ROOT,
            'inventories': {},
            'traits': [],
        },
    ]


def _custom_names(session):
    assert session.put('/resource_classes/CUSTOM_FPGA').ok
    assert session.put('/traits/CUSTOM_OWNER').ok


def test_one_write_leaves_what_the_requests_leave(tmp_path, app):
    session = _session(app)
    _custom_names(session)
    generations = direct.tree_writer(app)(_providers())
    assert generations == {ROOT: 2, CHILD: 2, BARE: 0}
    written = _tree(session, ROOT)

    other = wsgi.make_app(
        config.build_conf(
            [],
            overrides={
                'placement_database': {
                    'connection': 'sqlite:///%s/other.sqlite' % tmp_path
                }
            },
        ),
        auth_strategy='noauth2',
    )
    placement_db.sync('sqlite:///%s/other.sqlite' % tmp_path)
    other_session = _session(other)
    _custom_names(other_session)
    _by_requests(other_session, _providers())
    assert written == _tree(other_session, ROOT)
    # Allocation candidates see the new providers (the snapshot follows).
    found = session.get(
        '/allocation_candidates', params={'resources': 'VCPU:1'}
    ).json()['provider_summaries']
    assert set(found) == {ROOT, CHILD, BARE}


def test_a_taken_name_writes_nothing(app):
    session = _session(app)
    _custom_names(session)
    assert session.post(
        '/resource_providers', json={'uuid': BARE, 'name': 'cn1_bare'}
    ).ok
    with pytest.raises(exception.Conflict):
        direct.tree_writer(app)(_providers())
    listed = session.get('/resource_providers').json()['resource_providers']
    assert [p['name'] for p in listed] == ['cn1_bare']


def test_an_unknown_trait_or_parent_is_refused(app):
    write = direct.tree_writer(app)
    with pytest.raises(exception.BadRequest):
        write(_providers()[:1] + [dict(_providers()[1], inventories={})])
    with pytest.raises(exception.BadRequest):
        write([_providers()[2]])
    assert direct.tree_writer(object()) is None
