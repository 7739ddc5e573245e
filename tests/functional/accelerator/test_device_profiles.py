"""/v2/device_profiles: create, list, show, delete; validation naming the
bad key; RBAC; conflicts."""

import pytest

from tests.functional.accelerator.conftest import MEMBER
from tests.functional.accelerator.conftest import NOBODY
from tests.functional.accelerator.conftest import READER
from tests.functional.accelerator.conftest import SERVICE
from tests.functional.accelerator.conftest import error_text

GROUPS = [
    {
        'resources:FPGA': '2',
        'trait:CUSTOM_FPGA_INTEL': 'required',
        'trait:CUSTOM_SLOW': 'forbidden',
        'accel:bitstream_id': 'b1',
    },
    {'resources:PGPU': 1},
]


def test_create_from_a_list_as_cyborgs_client_sends(api):
    response = api.post(
        '/v2/device_profiles',
        [
            {
                'name': 'fpga_and-gpu',
                'description': 'two groups',
                'groups': GROUPS,
            }
        ],
    )
    assert response.status_code == 201
    body = response.json
    assert body['name'] == 'fpga_and-gpu'
    assert body['description'] == 'two groups'
    assert body['groups'] == GROUPS  # order and values kept
    assert body['links'][0]['href'].endswith(
        '/v2/device_profiles/' + body['uuid']
    )
    assert body['created_at'].endswith('+00:00')


def test_create_with_a_given_uuid(api):
    uuid = '5d5ba3b9-2d58-4ac9-8b3d-2b7c8b0f5a11'
    response = api.post(
        '/v2/device_profiles', [{'name': 'p', 'uuid': uuid, 'groups': GROUPS}]
    )
    assert response.status_code == 201
    assert response.json['uuid'] == uuid


def test_a_bare_object_is_400_as_from_cyborg(api):
    response = api.post('/v2/device_profiles', {'name': 'p', 'groups': GROUPS})
    assert response.status_code == 400
    assert 'is not of type' in error_text(response)
    assert api.get('/v2/device_profiles').json['device_profiles'] == []


def test_duplicate_name_is_409(api):
    api.profile('dup')
    response = api.post(
        '/v2/device_profiles', [{'name': 'dup', 'groups': GROUPS}]
    )
    assert response.status_code == 409
    assert "'dup'" in error_text(response)


@pytest.mark.parametrize(
    'profile,needle',
    [
        ({'groups': GROUPS}, "'name' is a required property"),
        ({'name': 'p'}, "'groups' is a required property"),
        ({'name': 'p', 'groups': []}, 'groups'),
        ({'name': 'bad name!', 'groups': GROUPS}, 'bad name!'),
        ({'name': 'p', 'groups': GROUPS, 'colour': 'red'}, 'colour'),
        ({'name': 'p', 'groups': [{}]}, 'groups/0'),
        (
            {'name': 'p', 'groups': [{'resources:FPGA': 0}]},
            "key 'resources:FPGA'",
        ),
        (
            {'name': 'p', 'groups': [{'resources:FPGA': 1.0}]},
            "key 'resources:FPGA'",
        ),
        (
            {'name': 'p', 'groups': [{'resources:FPGA': '1.0'}]},
            "key 'resources:FPGA'",
        ),
        (
            {'name': 'p', 'groups': [{'resources:FPGA': '-1'}]},
            "key 'resources:FPGA'",
        ),
        (
            {'name': 'p', 'groups': [{'resources:FPGA': True}]},
            "key 'resources:FPGA'",
        ),
        (
            {
                'name': 'p',
                'groups': [
                    {'resources:FPGA': 1, 'trait:CUSTOM_X': 'preferred'}
                ],
            },
            "key 'trait:CUSTOM_X'",
        ),
        (
            {'name': 'p', 'groups': [{'resources:FPGA': 1, 'colour': 'red'}]},
            "key 'colour'",
        ),
        (
            {'name': 'p', 'groups': [{'resources:FPGA': 1, 'accel:x': 3}]},
            "key 'accel:x'",
        ),
        (
            {'name': 'p', 'groups': [{'trait:CUSTOM_X': 'required'}]},
            'group 0 asks for no resources',
        ),
        ({'name': 'p', 'groups': GROUPS, 'uuid': 'not-a-uuid'}, 'not-a-uuid'),
    ],
)
def test_invalid_profiles_are_400_naming_the_problem(api, profile, needle):
    response = api.post('/v2/device_profiles', [profile])
    assert response.status_code == 400, response.text
    assert needle in error_text(response)
    assert api.get('/v2/device_profiles').json['device_profiles'] == []


@pytest.mark.parametrize(
    'body', [[], [{'name': 'a', 'groups': GROUPS}] * 2, 'text', 7]
)
def test_malformed_create_bodies_are_400(api, body):
    response = api.post('/v2/device_profiles', body)
    assert response.status_code == 400


def test_malformed_json_and_wrong_media_type(api):
    response = api.client.simulate_post(
        '/v2/device_profiles',
        body='',
        headers=dict(api_admin(), **{'Content-Type': 'application/json'}),
    )
    assert response.status_code == 400
    response = api.client.simulate_post(
        '/v2/device_profiles',
        body='{"name": ',
        headers=dict(api_admin(), **{'Content-Type': 'application/json'}),
    )
    assert response.status_code == 400
    assert 'Malformed JSON' in error_text(response)
    response = api.client.simulate_post(
        '/v2/device_profiles',
        body='null',
        headers=dict(api_admin(), **{'Content-Type': 'application/json'}),
    )
    assert response.status_code == 400
    response = api.client.simulate_post(
        '/v2/device_profiles',
        body='name=x',
        headers=dict(api_admin(), **{'Content-Type': 'text/plain'}),
    )
    assert response.status_code == 415


def api_admin():
    from tests.functional.accelerator.conftest import ADMIN

    return dict(ADMIN)


def test_list_and_filter_by_name(api):
    api.profile('one')
    api.profile('two')
    names = [
        p['name']
        for p in api.get('/v2/device_profiles').json['device_profiles']
    ]
    assert names == ['one', 'two']
    only = api.get('/v2/device_profiles', params={'name': 'two'}).json
    assert [p['name'] for p in only['device_profiles']] == ['two']
    none = api.get('/v2/device_profiles', params={'name': 'three'}).json
    assert none['device_profiles'] == []
    response = api.get('/v2/device_profiles', params={'colour': 'red'})
    assert response.status_code == 400
    assert "'colour'" in error_text(response)


def test_show_by_uuid_and_by_name_from_2_2(api):
    created = api.profile('named')
    by_uuid = api.get('/v2/device_profiles/' + created['uuid'])
    assert by_uuid.status_code == 200
    assert by_uuid.json['device_profile']['name'] == 'named'
    for version in ('2.0', '2.1'):
        response = api.get('/v2/device_profiles/named', version=version)
        assert response.status_code == 406  # as Cyborg
        assert '2.2' in error_text(response)
    for version in ('2.2', '2.3'):
        response = api.get('/v2/device_profiles/named', version=version)
        assert response.status_code == 200
        assert response.json['device_profile']['uuid'] == created['uuid']
    missing = api.get('/v2/device_profiles/nothing', version='2.2')
    assert missing.status_code == 404
    assert 'nothing' in error_text(missing)
    missing = api.get(
        '/v2/device_profiles/5d5ba3b9-2d58-4ac9-8b3d-2b7c8b0f5a11'
    )
    assert missing.status_code == 404


def test_delete_by_uuid(api):
    created = api.profile('gone')
    assert (
        api.delete('/v2/device_profiles/' + created['uuid']).status_code == 204
    )
    assert api.get('/v2/device_profiles/' + created['uuid']).status_code == 404
    assert (
        api.delete('/v2/device_profiles/' + created['uuid']).status_code == 404
    )


def test_delete_by_names_all_or_none(api):
    api.profile('a')
    api.profile('b')
    api.profile('c')
    response = api.delete('/v2/device_profiles', params={'value': 'a,missing'})
    assert response.status_code == 404
    assert 'missing' in error_text(response)
    assert len(api.get('/v2/device_profiles').json['device_profiles']) == 3
    assert (
        api.delete('/v2/device_profiles', params={'value': 'a,b'}).status_code
        == 204
    )
    names = [
        p['name']
        for p in api.get('/v2/device_profiles').json['device_profiles']
    ]
    assert names == ['c']


@pytest.mark.parametrize(
    'params,needle',
    [
        ({}, "'value'"),
        ({'value': ''}, "'value'"),
        ({'value': 'a,,b'}, 'empty name'),
        ({'name': 'a'}, "'name'"),
    ],
)
def test_malformed_delete_is_400(api, params, needle):
    api.profile('a')
    response = api.delete('/v2/device_profiles', params=params)
    assert response.status_code == 400
    assert needle in error_text(response)


def test_delete_is_refused_while_arqs_use_the_profile(api):
    created = api.profile('busy')
    [arq] = api.arqs('busy')
    for response in (
        api.delete('/v2/device_profiles/' + created['uuid']),
        api.delete('/v2/device_profiles', params={'value': 'busy'}),
    ):
        assert response.status_code == 409
        assert 'busy' in error_text(response)
    api.delete(
        '/v2/accelerator_requests',
        params={'arqs': arq['uuid']},
        headers=SERVICE,
    )
    assert (
        api.delete('/v2/device_profiles/' + created['uuid']).status_code == 204
    )


@pytest.mark.parametrize('headers', [MEMBER, READER, SERVICE, NOBODY])
def test_only_admins_create_and_delete(api, headers):
    response = api.post(
        '/v2/device_profiles',
        [{'name': 'x', 'groups': GROUPS}],
        headers=headers,
    )
    assert response.status_code == 403
    assert 'cyborg:device_profile:create' in error_text(response)
    created = api.profile('kept')
    response = api.delete(
        '/v2/device_profiles/' + created['uuid'], headers=headers
    )
    assert response.status_code == 403


@pytest.mark.parametrize(
    'headers,status',
    [(MEMBER, 200), (READER, 200), (SERVICE, 200), (NOBODY, 403)],
)
def test_who_reads_profiles(api, headers, status):
    created = api.profile('read')
    assert (
        api.get('/v2/device_profiles', headers=headers).status_code == status
    )
    assert (
        api.get(
            '/v2/device_profiles/' + created['uuid'], headers=headers
        ).status_code
        == status
    )
