from unittest import mock

import pytest

from nimbus.common.clients import accelerator as accelerator_client
from nimbus.common.objects import RequestSpec
from nimbus.common.objects import Selection
from nimbus.conductor import accelerators

SELECTION_PRIMITIVE = {
    'service_host': 'h1',
    'allocation_request': {
        'allocations': {},
        'mappings': {
            '': ['root'],
            '_device_profile_0': ['fpga-rp'],
            '_device_profile_1': ['gpu-rp1', 'gpu-rp2'],
        },
    },
}
SELECTION = Selection.from_primitive(SELECTION_PRIMITIVE)


def _spec(values):
    return RequestSpec.from_primitive(dict(values, flavor={}))


ARQS = [
    {'uuid': 'a0', 'device_profile_group_id': 0},
    {'uuid': 'a1', 'device_profile_group_id': 1},
    {'uuid': 'a2', 'device_profile_group_id': 1},
]


def test_match_arqs_follows_the_mappings():
    assert accelerators.match_arqs(ARQS, SELECTION.allocation_request) == {
        'a0': 'fpga-rp',
        'a1': 'gpu-rp1',
        'a2': 'gpu-rp2',
    }


def test_match_arqs_without_a_mapping_fails():
    with pytest.raises(accelerators.AcceleratorBindError, match='a0'):
        accelerators.match_arqs(ARQS[:1], {'mappings': {}})


def test_create_and_bind_binds_each_arq_to_its_provider():
    client = mock.Mock()
    client.create_arqs.return_value = ARQS
    binder = accelerators.AcceleratorBinder(client)
    uuids = binder.create_and_bind(
        None, 'i1', _spec({'device_profile': 'p'}), SELECTION
    )
    assert uuids == ['a0', 'a1', 'a2']
    client.create_arqs.assert_called_once_with(None, 'p')
    bindings = client.bind_arqs.call_args[0][1]
    assert bindings['a2'] == {
        'hostname': 'h1',
        'device_rp_uuid': 'gpu-rp2',
        'instance_uuid': 'i1',
    }


def test_a_failed_bind_deletes_the_arqs():
    client = mock.Mock()
    client.create_arqs.return_value = ARQS
    client.bind_arqs.side_effect = accelerator_client.AcceleratorError('x')
    binder = accelerators.AcceleratorBinder(client)
    with pytest.raises(accelerators.AcceleratorBindError, match='h1'):
        binder.create_and_bind(
            None, 'i1', _spec({'device_profile': 'p'}), SELECTION
        )
    client.delete_arqs.assert_called_once_with(None, ['a0', 'a1', 'a2'])


def test_bind_for_build():
    assert (
        accelerators.bind_for_build(None, None, 'i', _spec({}), SELECTION)
        == []
    )
    with pytest.raises(
        accelerators.AcceleratorBindError, match='no accelerator service'
    ):
        accelerators.bind_for_build(
            None, None, 'i', _spec({'device_profile': 'p'}), SELECTION
        )
