"""nimbus.common.clients.accelerator: device profiles -> request groups."""

from unittest import mock

import pytest
import requests

from nimbus.common.clients import accelerator
from nimbus.common import config

# Seed 004's profile, with a second group to check the order.
PROFILE = {
    'name': 'gpu-nvidia-t4',
    'uuid': 'd6cd5b94',
    'groups': [
        {
            'resources:PGPU': '1',
            'trait:CUSTOM_GPU_PRODUCT_ID_1EB8': 'required',
        },
        {
            'resources:PGPU': '2',
            'resources:CUSTOM_FPGA': '1',
            'trait:CUSTOM_GPU_PRODUCT_ID_1E04': 'required',
            'trait:CUSTOM_SLOW': 'forbidden',
            'accel:bitstream_id': 'abc',
        },
    ],
}


def test_groups_become_request_groups_in_profile_order():
    assert accelerator.request_groups(PROFILE['groups']) == [
        {
            'requester_id': 'device_profile_0',
            'resources': {'PGPU': 1},
            'required_traits': ['CUSTOM_GPU_PRODUCT_ID_1EB8'],
            'forbidden_traits': [],
        },
        {
            'requester_id': 'device_profile_1',
            'resources': {'PGPU': 2, 'CUSTOM_FPGA': 1},
            'required_traits': ['CUSTOM_GPU_PRODUCT_ID_1E04'],
            'forbidden_traits': ['CUSTOM_SLOW'],
        },
    ]


@pytest.mark.parametrize(
    'group, words',
    [
        ({'resources:PGPU': 'one'}, 'not a positive amount'),
        ({'resources:PGPU': '0'}, 'not a positive amount'),
        ({'resources:PGPU': '1', 'trait:X': 'maybe'}, "'required' or"),
        ({'trait:CUSTOM_X': 'required'}, 'asks for no resources'),
        ('PGPU', 'not an object'),
    ],
)
def test_malformed_groups(group, words):
    with pytest.raises(accelerator.DeviceProfileError, match=words):
        accelerator.request_groups([{'resources:VGPU': '1'}, group])


def _response(status, body=None):
    response = mock.Mock(status_code=status, text=str(body))
    response.json.return_value = body
    return response


def _client(response):
    session = mock.Mock()
    if isinstance(response, Exception):
        session.get.side_effect = response
    else:
        session.get.return_value = response
    return accelerator.AcceleratorClient(
        'http://accel/v2/', session=session, timeout=5
    ), session


def test_get_device_profile_groups_asks_by_name():
    client, session = _client(
        _response(
            200,
            {
                'device_profiles': [
                    {'name': 'other', 'groups': [{'resources:X': '9'}]},
                    PROFILE,
                ]
            },
        )
    )
    ctxt = mock.Mock(global_request_id='req-1')
    assert (
        client.get_device_profile_groups(ctxt, 'gpu-nvidia-t4')
        == PROFILE['groups']
    )
    (url,), kwargs = session.get.call_args
    assert url == 'http://accel/v2/device_profiles'
    assert kwargs['params'] == {'name': 'gpu-nvidia-t4'}
    assert kwargs['timeout'] == 5
    assert kwargs['headers']['X-Openstack-Request-Id'] == 'req-1'
    assert [
        g['requester_id']
        for g in client.get_device_request_groups(ctxt, 'gpu-nvidia-t4')
    ] == ['device_profile_0', 'device_profile_1']


@pytest.mark.parametrize(
    'response, error',
    [
        (
            _response(200, {'device_profiles': []}),
            accelerator.DeviceProfileError,
        ),
        (_response(404, {}), accelerator.DeviceProfileError),
        (
            _response(200, {'device_profiles': [{'name': 'p', 'groups': []}]}),
            accelerator.DeviceProfileError,
        ),
        (_response(500, 'boom'), accelerator.AcceleratorError),
        (_response(200, {'unexpected': 1}), accelerator.AcceleratorError),
        (requests.ConnectionError('refused'), accelerator.AcceleratorError),
    ],
)
def test_get_device_profile_errors(response, error):
    client, _session = _client(response)
    with pytest.raises(error):
        client.get_device_profile_groups(None, 'p')


def test_from_conf_needs_an_endpoint():
    conf = config.build_conf([])
    assert conf.accelerator_client.endpoint is None
    assert accelerator.from_conf(conf) is None
    conf = config.build_conf(
        [],
        overrides={
            'accelerator_client': {
                'endpoint': 'http://127.0.0.1:6666/v2',
                'timeout': 7,
            }
        },
    )
    client = accelerator.from_conf(conf)
    assert client.endpoint == 'http://127.0.0.1:6666/v2'
    assert client.timeout == 7


def test_options_are_listed_for_the_config_generator():
    from nimbus.common.clients import options

    groups = dict(options.list_opts())
    names = {o.dest for o in groups['accelerator_client']}
    assert {
        'endpoint',
        'timeout',
        'auth_strategy',
        'auth_type',
        'auth_section',
        'auth_url',
        'cafile',
        'retries',
    } <= names


def _arq_client(*responses):
    session = mock.Mock()
    session.request.side_effect = list(responses)
    return accelerator.AcceleratorClient(
        'http://accel/v2', session=session, timeout=5, retries=2, retry_wait=0
    ), session


ARQ = {'uuid': 'a1', 'device_profile_group_id': 0, 'state': 'Initial'}


def test_create_arqs_posts_the_profile_name():
    client, session = _arq_client(_response(201, {'arqs': [ARQ]}))
    assert client.create_arqs(None, 'fpga') == [ARQ]
    (method, url), kwargs = session.request.call_args
    assert (method, url) == ('POST', 'http://accel/v2/accelerator_requests')
    assert kwargs['json'] == {'device_profile_name': 'fpga'}


def test_bind_arqs_is_a_json_patch_per_arq():
    client, session = _arq_client(_response(202, None))
    client.bind_arqs(
        None,
        {
            'a1': {
                'hostname': 'h1',
                'device_rp_uuid': 'rp',
                'instance_uuid': 'i1',
            }
        },
    )
    (method, url), kwargs = session.request.call_args
    assert method == 'PATCH'
    assert kwargs['json'] == {
        'a1': [
            {'path': '/hostname', 'op': 'add', 'value': 'h1'},
            {'path': '/device_rp_uuid', 'op': 'add', 'value': 'rp'},
            {'path': '/instance_uuid', 'op': 'add', 'value': 'i1'},
        ]
    }


def test_transient_errors_are_retried_then_raised():
    client, session = _arq_client(
        requests.ConnectionError('refused'),
        _response(503, 'busy'),
        _response(200, {'arqs': [ARQ]}),
    )
    assert client.get_arqs_for_instance(None, 'i1') == [ARQ]
    assert session.request.call_count == 3
    client, session = _arq_client(*[_response(503, 'busy')] * 3)
    with pytest.raises(accelerator.AcceleratorError):
        client.create_arqs(None, 'fpga')
    assert session.request.call_count == 3


def test_other_errors_are_not_retried():
    client, session = _arq_client(_response(400, 'bad'))
    with pytest.raises(accelerator.AcceleratorError, match='400'):
        client.create_arqs(None, 'fpga')
    assert session.request.call_count == 1


def test_resolved_listing_is_none_while_binding():
    client, session = _arq_client(_response(423, 'locked'))
    assert client.get_arqs_for_instance(None, 'i1', only_resolved=True) is None
    assert session.request.call_args[1]['params'] == {
        'instance': 'i1',
        'bind_state': 'resolved',
    }


def test_get_and_delete_arqs():
    client, session = _arq_client(
        _response(200, ARQ),
        _response(404, ''),
        _response(204, None),
        _response(404, ''),
    )
    assert client.get_arqs(None, ['a1', 'gone']) == [ARQ]
    client.delete_arqs(None, ['a1', 'a2'])
    assert session.request.call_args[1]['params'] == {'arqs': 'a1,a2'}
    client.delete_arqs_for_instance(None, 'i1')
    assert session.request.call_args[1]['params'] == {'instance': 'i1'}
