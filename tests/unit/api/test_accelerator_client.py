"""nimbus.common.clients.accelerator: device profiles -> request groups."""

from unittest import mock

import pytest
import requests

from nimbus.common.clients import accelerator
from nimbus.common import config

# Seed 004's profile, with a second group to check the order.
PROFILE = {'name': 'gpu-nvidia-t4', 'uuid': 'd6cd5b94', 'groups': [
    {'resources:PGPU': '1', 'trait:CUSTOM_GPU_PRODUCT_ID_1EB8': 'required'},
    {'resources:PGPU': '2', 'resources:CUSTOM_FPGA': '1',
     'trait:CUSTOM_GPU_PRODUCT_ID_1E04': 'required',
     'trait:CUSTOM_SLOW': 'forbidden', 'accel:bitstream_id': 'abc'},
]}


def test_groups_become_request_groups_in_profile_order():
    assert accelerator.request_groups(PROFILE['groups']) == [
        {'requester_id': 'device_profile_0', 'resources': {'PGPU': 1},
         'required_traits': ['CUSTOM_GPU_PRODUCT_ID_1EB8'],
         'forbidden_traits': []},
        {'requester_id': 'device_profile_1',
         'resources': {'PGPU': 2, 'CUSTOM_FPGA': 1},
         'required_traits': ['CUSTOM_GPU_PRODUCT_ID_1E04'],
         'forbidden_traits': ['CUSTOM_SLOW']},
    ]


@pytest.mark.parametrize('group, words', [
    ({'resources:PGPU': 'one'}, 'not a positive amount'),
    ({'resources:PGPU': '0'}, 'not a positive amount'),
    ({'resources:PGPU': '1', 'trait:X': 'maybe'}, "'required' or"),
    ({'trait:CUSTOM_X': 'required'}, 'asks for no resources'),
    ('PGPU', 'not an object'),
])
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
    return accelerator.AcceleratorClient('http://accel/v2/', session=session,
                                         timeout=5), session


def test_get_device_profile_groups_asks_by_name():
    client, session = _client(_response(200, {'device_profiles': [
        {'name': 'other', 'groups': [{'resources:X': '9'}]}, PROFILE]}))
    ctxt = mock.Mock(global_request_id='req-1')
    assert client.get_device_profile_groups(ctxt, 'gpu-nvidia-t4') == \
        PROFILE['groups']
    (url,), kwargs = session.get.call_args
    assert url == 'http://accel/v2/device_profiles'
    assert kwargs['params'] == {'name': 'gpu-nvidia-t4'}
    assert kwargs['timeout'] == 5
    assert kwargs['headers']['X-Openstack-Request-Id'] == 'req-1'
    assert [g['requester_id'] for g in client.get_device_request_groups(
        ctxt, 'gpu-nvidia-t4')] == ['device_profile_0', 'device_profile_1']


@pytest.mark.parametrize('response, error', [
    (_response(200, {'device_profiles': []}), accelerator.DeviceProfileError),
    (_response(404, {}), accelerator.DeviceProfileError),
    (_response(200, {'device_profiles': [{'name': 'p', 'groups': []}]}),
     accelerator.DeviceProfileError),
    (_response(500, 'boom'), accelerator.AcceleratorError),
    (_response(200, {'unexpected': 1}), accelerator.AcceleratorError),
    (requests.ConnectionError('refused'), accelerator.AcceleratorError),
])
def test_get_device_profile_errors(response, error):
    client, _session = _client(response)
    with pytest.raises(error):
        client.get_device_profile_groups(None, 'p')


def test_from_conf_needs_an_endpoint():
    conf = config.build_conf([])
    assert conf.accelerator_client.endpoint is None
    assert accelerator.from_conf(conf) is None
    conf = config.build_conf([], overrides={'accelerator_client': {
        'endpoint': 'http://127.0.0.1:6666/v2', 'timeout': 7}})
    client = accelerator.from_conf(conf)
    assert client.endpoint == 'http://127.0.0.1:6666/v2'
    assert client.timeout == 7


def test_options_are_listed_for_the_config_generator():
    from nimbus.common.clients import options
    groups = dict(options.list_opts())
    names = {o.dest for o in groups['accelerator_client']}
    assert {'endpoint', 'timeout', 'auth_strategy', 'auth_type',
            'auth_section', 'auth_url', 'cafile'} <= names
