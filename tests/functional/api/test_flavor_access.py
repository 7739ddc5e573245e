"""os-flavor-access and addTenantAccess/removeTenantAccess: a private
flavor is seen, shown and booted by the projects granted it and by the
admins only."""

import pytest


def _flavor(api, flavor_id, public=False, version=None):
    r = api.admin(
        'POST',
        '/v2.1/flavors',
        {
            'flavor': {
                'name': 'f-%s' % flavor_id,
                'ram': 512,
                'vcpus': 1,
                'disk': 1,
                'id': flavor_id,
                'os-flavor-access:is_public': public,
            }
        },
        version=version,
    )
    assert r.status_code == 200, r.text


def _action(api, flavor_id, name, tenant, user='admin', version=None):
    return api.req(
        'POST',
        '/v2.1/flavors/%s/action' % flavor_id,
        {name: {'tenant': tenant}},
        user=user,
        version=version,
    )


def _listed(api, user, project=None, path='/v2.1/flavors/detail'):
    r = api.req('GET', path, user=user, project=project)
    assert r.status_code == 200, r.text
    return {f['id'] for f in r.json['flavors']}


def _boot(api, flavor_id, user, project):
    return api.req(
        'POST',
        '/v2.1/servers',
        {
            'server': {
                'name': 'vm',
                'flavorRef': flavor_id,
                'imageRef': api.image,
            }
        },
        user=user,
        project=project,
    )


@pytest.fixture
def world(api):
    api.image = api.add_image()
    _flavor(api, 'priv')
    _flavor(api, 'pub', public=True)
    return api


def test_a_new_private_flavor_has_an_empty_access_list(world):
    r = world.admin('GET', '/v2.1/flavors/priv/os-flavor-access')
    assert r.status_code == 200
    assert r.json == {'flavor_access': []}


def test_grant_lets_the_project_list_show_and_boot_then_revoke(world):
    assert _listed(world, 'alice', 'p1') == {'pub'}
    assert (
        world.req(
            'GET', '/v2.1/flavors/priv', user='alice', project='p1'
        ).status_code
        == 404
    )
    r = _boot(world, 'priv', 'alice', 'p1')
    assert r.status_code == 400
    assert 'priv' in r.json['badRequest']['message']
    assert world.conductor.calls == []

    r = _action(world, 'priv', 'addTenantAccess', 'p1')
    assert r.status_code == 200, r.text
    assert r.json == {
        'flavor_access': [{'flavor_id': 'priv', 'tenant_id': 'p1'}]
    }
    _action(world, 'priv', 'addTenantAccess', 'p2')
    r = world.admin('GET', '/v2.1/flavors/priv/os-flavor-access')
    assert sorted(a['tenant_id'] for a in r.json['flavor_access']) == [
        'p1',
        'p2',
    ]
    assert _listed(world, 'alice', 'p1') == {'pub', 'priv'}
    assert _listed(world, 'alice', 'p1', '/v2.1/flavors') == {'pub', 'priv'}
    assert _listed(world, 'bob', 'p3') == {'pub'}
    r = world.req('GET', '/v2.1/flavors/priv', user='alice', project='p1')
    assert r.json['flavor']['os-flavor-access:is_public'] is False
    r = world.req(
        'GET', '/v2.1/flavors/priv/os-extra_specs', user='bob', project='p3'
    )
    assert r.status_code == 404
    assert _boot(world, 'priv', 'alice', 'p1').status_code == 202
    assert _boot(world, 'priv', 'bob', 'p3').status_code == 400

    r = _action(world, 'priv', 'removeTenantAccess', 'p1')
    assert r.status_code == 200
    assert r.json == {
        'flavor_access': [{'flavor_id': 'priv', 'tenant_id': 'p2'}]
    }
    assert _listed(world, 'alice', 'p1') == {'pub'}
    assert _boot(world, 'priv', 'alice', 'p1').status_code == 400


def test_admins_see_private_flavors_with_is_public_none(world):
    assert 'priv' not in _listed(world, 'admin')
    r = world.admin('GET', '/v2.1/flavors/detail?is_public=None')
    assert {f['id'] for f in r.json['flavors']} == {'pub', 'priv'}
    r = world.admin('GET', '/v2.1/flavors/detail?is_public=false')
    assert {f['id'] for f in r.json['flavors']} == {'priv'}
    assert world.admin('GET', '/v2.1/flavors/priv').status_code == 200


def test_public_flavor_has_no_access_list_and_refuses_grants(world):
    r = world.admin('GET', '/v2.1/flavors/pub/os-flavor-access')
    assert r.status_code == 404
    assert 'public' in r.json['itemNotFound']['message']
    r = _action(world, 'pub', 'addTenantAccess', 'p1', version='2.7')
    assert r.status_code == 409
    assert 'public' in r.json['conflictingRequest']['message']
    # Below 2.7 Nova stores the grant, which changes nothing.
    r = _action(world, 'pub', 'addTenantAccess', 'p1', version='2.6')
    assert r.status_code == 200


def test_duplicate_grant_409_missing_revoke_404(world):
    assert _action(world, 'priv', 'addTenantAccess', 'p1').status_code == 200
    r = _action(world, 'priv', 'addTenantAccess', 'p1')
    assert r.status_code == 409
    assert 'p1' in r.json['conflictingRequest']['message']
    r = _action(world, 'priv', 'removeTenantAccess', 'p9')
    assert r.status_code == 404
    assert 'p9' in r.json['itemNotFound']['message']


def test_members_may_not_list_grant_or_revoke(world):
    _action(world, 'priv', 'addTenantAccess', 'p1')
    for name in ('addTenantAccess', 'removeTenantAccess'):
        r = _action(world, 'priv', name, 'p1', user='demo')
        assert r.status_code == 403
    r = world.req('GET', '/v2.1/flavors/priv/os-flavor-access')
    assert r.status_code == 403


@pytest.mark.parametrize(
    'body',
    [
        {},
        {'addTenantAccess': {}},
        {'addTenantAccess': {'tenant': ''}},
        {'addTenantAccess': {'tenant': 5}},
        {'addTenantAccess': {'tenant': 'p', 'x': 1}},
        {'addTenantAccess': {'tenant': 'p'}, 'removeTenantAccess': {}},
        {'resize': {'flavorRef': '1'}},
    ],
)
def test_bad_action_bodies_are_400(world, body):
    r = world.admin('POST', '/v2.1/flavors/priv/action', body)
    assert r.status_code == 400, r.text
    assert r.json['badRequest']['message']


def test_unknown_flavor_is_404(world):
    for name in ('addTenantAccess', 'removeTenantAccess'):
        r = _action(world, 'nope', name, 'p1')
        assert r.status_code == 404
        assert 'nope' in r.json['itemNotFound']['message']
    r = world.admin('GET', '/v2.1/flavors/nope/os-flavor-access')
    assert r.status_code == 404


def test_deleting_a_flavor_drops_its_grants(world):
    _action(world, 'priv', 'addTenantAccess', 'p1')
    assert world.admin('DELETE', '/v2.1/flavors/priv').status_code == 202
    _flavor(world, 'priv')
    r = world.admin('GET', '/v2.1/flavors/priv/os-flavor-access')
    assert r.json == {'flavor_access': []}
    assert _listed(world, 'alice', 'p1') == {'pub'}
