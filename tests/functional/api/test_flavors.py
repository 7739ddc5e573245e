"""/flavors and os-extra_specs."""

import pytest


def create(api, version=None, user='admin', **flavor):
    body = {
        'flavor': dict(
            {'name': 'm1.tiny', 'ram': 512, 'vcpus': 1, 'disk': 1}, **flavor
        )
    }
    return api.req('POST', '/v2.1/flavors', body, user=user, version=version)


def test_crud(api):
    r = create(
        api,
        id='tiny',
        swap=0,
        rxtx_factor=2.0,
        **{'OS-FLV-EXT-DATA:ephemeral': 5},
    )
    assert r.status_code == 200
    flavor = r.json['flavor']
    assert flavor['id'] == 'tiny' and flavor['ram'] == 512
    assert flavor['OS-FLV-EXT-DATA:ephemeral'] == 5
    assert flavor['os-flavor-access:is_public'] is True
    assert flavor['swap'] == ''
    r = create(api, name='m1.big', ram='2048', vcpus='2', disk='20')
    assert r.status_code == 200 and r.json['flavor']['ram'] == 2048
    big = r.json['flavor']['id']
    assert create(api, id='tiny', name='x').status_code == 409
    assert create(api).status_code == 409
    r = api.req('GET', '/v2.1/flavors')
    assert sorted(f['name'] for f in r.json['flavors']) == [
        'm1.big',
        'm1.tiny',
    ]
    assert 'ram' not in r.json['flavors'][0]
    r = api.req('GET', '/v2.1/flavors/detail?minRam=1024', version='2.75')
    assert [f['id'] for f in r.json['flavors']] == [big]
    assert r.json['flavors'][0]['swap'] == 0
    assert 'extra_specs' in r.json['flavors'][0]
    assert r.json['flavors'][0]['description'] is None
    r = api.req('GET', '/v2.1/flavors?limit=1&sort_key=name')
    assert len(r.json['flavors']) == 1 and 'flavors_links' in r.json
    r = api.req('GET', '/v2.1/flavors/tiny')
    assert r.json['flavor']['name'] == 'm1.tiny'
    r = api.admin(
        'PUT',
        '/v2.1/flavors/tiny',
        {'flavor': {'description': 'small'}},
        version='2.55',
    )
    assert r.json['flavor']['description'] == 'small'
    assert (
        api.admin(
            'PUT', '/v2.1/flavors/tiny', {'flavor': {'description': 'x'}}
        ).status_code
        == 405
    )
    assert api.admin('DELETE', '/v2.1/flavors/tiny').status_code == 202
    assert api.req('GET', '/v2.1/flavors/tiny').status_code == 404
    assert api.admin('DELETE', '/v2.1/flavors/tiny').status_code == 404


@pytest.mark.parametrize(
    'flavor, field',
    [
        ({'ram': 0}, 'ram'),
        ({'vcpus': -1}, 'vcpus'),
        ({'disk': 'x'}, 'disk'),
        ({'name': ''}, 'name'),
        ({'name': ' lead'}, 'name'),
        ({'id': 'bad id!'}, 'id'),
        ({'extra': 1}, 'extra'),
        ({'os-flavor-access:is_public': 'maybe'}, 'is_public'),
        ({'description': 'x'}, 'description'),
    ],
)
def test_create_bad(api, flavor, field):
    r = create(api, **flavor)
    assert r.status_code == 400
    assert field in r.json['badRequest']['message']


def test_member_may_not_manage(api):
    assert create(api, user='demo').status_code == 403
    create(api, id='f1')
    assert api.req('DELETE', '/v2.1/flavors/f1').status_code == 403
    r = api.req(
        'POST', '/v2.1/flavors/f1/os-extra_specs', {'extra_specs': {'a': 'b'}}
    )
    assert r.status_code == 403
    assert 'forbidden' in r.json


def test_extra_specs(api):
    create(api, id='f1')
    url = '/v2.1/flavors/f1/os-extra_specs'
    r = api.admin(
        'POST',
        url,
        {
            'extra_specs': {
                'hw:cpu_policy': 'dedicated',
                'resources:VGPU': '1',
                'trait:HW_CPU_X86_AVX2': 'required',
                'custom_key': True,
            }
        },
    )
    assert r.status_code == 200
    assert r.json['extra_specs']['custom_key'] == 'true'
    assert api.req('GET', url).json['extra_specs']['resources:VGPU'] == '1'
    assert api.req('GET', url + '/hw:cpu_policy').json == {
        'hw:cpu_policy': 'dedicated'
    }
    r = api.admin('PUT', url + '/hw:cpu_policy', {'hw:cpu_policy': 'shared'})
    assert r.json == {'hw:cpu_policy': 'shared'}
    r = api.admin('PUT', url + '/hw:cpu_policy', {'other': 'shared'})
    assert r.status_code == 400
    r = api.admin('PUT', url + '/a', {'a': '1', 'b': '2'})
    assert r.status_code == 400
    assert api.admin('DELETE', url + '/custom_key').status_code == 200
    assert api.admin('DELETE', url + '/custom_key').status_code == 404
    assert api.req('GET', url + '/custom_key').status_code == 404
    assert (
        api.req('GET', '/v2.1/flavors/nope/os-extra_specs').status_code == 404
    )
    r = api.admin(
        'POST',
        '/v2.1/flavors/nope/os-extra_specs',
        {'extra_specs': {'a': 'b'}},
    )
    assert r.status_code == 404
    r = api.req('GET', '/v2.1/flavors/f1', version='2.61')
    assert r.json['flavor']['extra_specs']['hw:cpu_policy'] == 'shared'


@pytest.mark.parametrize(
    'key, value',
    [
        ('hw:cpu_policy', 'sometimes'),
        ('hw:no_such_thing', '1'),
        ('resources:VCPU', 'many'),
        ('resources:NOT_A_CLASS', '1'),
        ('trait:HW_CPU_X86_AVX2', 'maybe'),
        ('bad key!', 'x'),
    ],
)
def test_extra_specs_invalid(api, key, value):
    create(api, id='f1')
    r = api.admin(
        'POST',
        '/v2.1/flavors/f1/os-extra_specs',
        {'extra_specs': {key: value}},
    )
    assert r.status_code == 400
    assert 'badRequest' in r.json
    assert (
        api.req('GET', '/v2.1/flavors/f1/os-extra_specs').json['extra_specs']
        == {}
    )


def test_bad_query(api):
    r = api.req('GET', '/v2.1/flavors?minRam=abc')
    assert r.status_code == 400 and 'minRam' in r.json['badRequest']['message']
    r = api.req('GET', '/v2.1/flavors?sort_key=bogus')
    assert r.status_code == 400


def test_numbered_trait_group_without_resources_is_refused(api):
    create(api, id='f1')
    url = '/v2.1/flavors/f1/os-extra_specs'
    r = api.admin(
        'POST', url, {'extra_specs': {'trait1:HW_CPU_X86_AVX2': 'required'}}
    )
    assert r.status_code == 400
    message = r.json['badRequest']['message']
    assert 'trait1:HW_CPU_X86_AVX2' in message
    assert 'request group 1 has traits but no resources' in message
    assert api.req('GET', url).json['extra_specs'] == {}
    # Named groups too, and a group whose amounts are all zero.
    for specs in (
        {'trait_gpu:CUSTOM_X': 'forbidden'},
        {'trait2:CUSTOM_X': 'required', 'resources2:VGPU': '0'},
        {'trait1:CUSTOM_X': 'required', 'resources2:VGPU': '1'},
    ):
        r = api.admin('POST', url, {'extra_specs': specs})
        assert r.status_code == 400, specs
        assert 'has traits but no resources' in r.json['badRequest']['message']
    # With its resources, in one request or added to existing ones.
    r = api.admin(
        'POST',
        url,
        {
            'extra_specs': {
                'trait1:HW_CPU_X86_AVX2': 'required',
                'resources1:VGPU': '1',
            }
        },
    )
    assert r.status_code == 200
    r = api.admin(
        'PUT', url + '/trait_gpu:CUSTOM_X', {'trait_gpu:CUSTOM_X': 'required'}
    )
    assert r.status_code == 400
    r = api.admin(
        'PUT', url + '/trait1:CUSTOM_Y', {'trait1:CUSTOM_Y': 'required'}
    )
    assert r.status_code == 200
    # Removing the group's resources would orphan its traits.
    r = api.admin('DELETE', url + '/resources1:VGPU')
    assert r.status_code == 400
    assert 'resources1:' in r.json['badRequest']['message']
    assert api.req('GET', url).json['extra_specs']['resources1:VGPU'] == '1'
    # The unnumbered group needs no resources of its own.
    r = api.admin(
        'POST', url, {'extra_specs': {'trait:HW_CPU_X86_AVX2': 'required'}}
    )
    assert r.status_code == 200


@pytest.mark.parametrize(
    'key, value, implemented',
    [
        ('hw:cpu_policy', 'mixed', 'shared, dedicated'),
        ('hw:cpu_thread_policy', 'isolate', 'prefer'),
        ('hw:cpu_thread_policy', 'require', 'prefer'),
        ('hw:emulator_threads_policy', 'isolate', 'share'),
        ('hw:mem_page_size', 'large', 'small, any'),
        ('hw:mem_page_size', '2MB', 'small, any'),
        ('hw:pci_numa_affinity_policy', 'required', 'preferred'),
    ],
)
def test_values_the_scheduler_does_not_implement_are_refused(
    api, key, value, implemented
):
    create(api, id='f1')
    r = api.admin(
        'POST',
        '/v2.1/flavors/f1/os-extra_specs',
        {'extra_specs': {key: value}},
    )
    assert r.status_code == 400
    assert r.json['badRequest']['message'] == (
        'Validation failed; extra spec %s: %r is not implemented by the '
        'Nimbus scheduler (it implements %s)' % (key, value, implemented)
    )


@pytest.mark.parametrize(
    'key, value',
    [
        ('hw:cpu_policy', 'shared'),
        ('hw:cpu_policy', 'dedicated'),
        ('hw:cpu_thread_policy', 'prefer'),
        ('hw:mem_page_size', 'any'),
        ('hw:emulator_threads_policy', 'share'),
    ],
)
def test_implemented_values_are_accepted(api, key, value):
    create(api, id='f1')
    r = api.admin(
        'POST',
        '/v2.1/flavors/f1/os-extra_specs',
        {'extra_specs': {key: value}},
    )
    assert r.status_code == 200
