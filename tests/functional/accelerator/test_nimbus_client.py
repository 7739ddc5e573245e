"""Nimbus's own accelerator client (nimbus/common/clients/accelerator.py,
what the API, conductors and computes use) against the real service over
HTTP: every call it makes is served in the shape it expects."""

import pytest

from nimbus.accelerator import states
from nimbus.common.clients import accelerator as client_mod
from nimbus.common import wsgi as common_wsgi
from tests.functional.accelerator.conftest import HOST
from tests.functional.accelerator.conftest import INSTANCE

RP0 = '33333333-0000-4000-8000-000000000000'
RP1 = '33333333-0000-4000-8000-000000000001'


@pytest.fixture
def served(api):
    server = common_wsgi.serve(
        api.client.app, '127.0.0.1', 0, threads=4, name='accel-test'
    )
    yield (
        api,
        client_mod.AcceleratorClient(
            server.url + '/accelerator/v2', retries=0
        ),
    )
    server.stop()


def test_the_whole_client_path(served):
    api, client = served
    api.profile(
        'fpga-gpu',
        groups=[
            {'resources:FPGA': '1', 'trait:CUSTOM_FPGA': 'required'},
            {'resources:PGPU': 1, 'accel:note': 'x'},
        ],
    )
    assert client.get_device_request_groups(None, 'fpga-gpu') == [
        {
            'requester_id': 'device_profile_0',
            'resources': {'FPGA': 1},
            'required_traits': ['CUSTOM_FPGA'],
            'forbidden_traits': [],
        },
        {
            'requester_id': 'device_profile_1',
            'resources': {'PGPU': 1},
            'required_traits': [],
            'forbidden_traits': [],
        },
    ]
    with pytest.raises(client_mod.DeviceProfileError):
        client.get_device_profile(None, 'missing')

    arqs = client.create_arqs(None, 'fpga-gpu')
    assert [a['device_profile_group_id'] for a in arqs] == [0, 1]
    client.bind_arqs(
        None,
        {
            arqs[0]['uuid']: {
                'hostname': HOST,
                'device_rp_uuid': RP0,
                'instance_uuid': INSTANCE,
            },
            arqs[1]['uuid']: {
                'hostname': HOST,
                'device_rp_uuid': RP1,
                'instance_uuid': INSTANCE,
            },
        },
    )
    # Still binding: the compute's resolved query says "not yet".
    assert (
        client.get_arqs_for_instance(None, INSTANCE, only_resolved=True)
        is None
    )
    api.bind_pass()
    resolved = client.get_arqs_for_instance(None, INSTANCE, only_resolved=True)
    assert {a['state'] for a in resolved} == {states.BOUND}
    shown = client.get_arqs(
        None, [arqs[1]['uuid'], '5d5ba3b9-2d58-4ac9-8b3d-2b7c8b0f5a11']
    )
    assert [a['uuid'] for a in shown] == [arqs[1]['uuid']]
    assert shown[0]['device_rp_uuid'] == RP1
    assert {e[0] for e in api.events.sent} == {a['uuid'] for a in arqs}

    client.delete_arqs(None, [arqs[0]['uuid']])
    assert [
        a['uuid'] for a in client.get_arqs_for_instance(None, INSTANCE)
    ] == [arqs[1]['uuid']]
    client.delete_arqs_for_instance(None, INSTANCE)
    assert client.get_arqs_for_instance(None, INSTANCE) == []
    client.delete_arqs_for_instance(None, INSTANCE)  # idempotent
