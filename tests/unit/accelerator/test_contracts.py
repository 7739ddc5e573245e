"""The accelerator RPC contracts: AcceleratorDevice 1.0 (report_devices'
devices) and AgentArq 1.0 (the agent's program/release arq)."""

import hypothesis
from hypothesis import strategies as st
import pytest

from nimbus.accelerator import contracts
from nimbus.common.objects import base

TEXT = st.text(min_size=1, max_size=20)
OPT = st.none() | TEXT
HANDLES = st.builds(contracts.AttachHandle, TEXT, TEXT, TEXT, st.booleans())
DEPLOYABLES = st.builds(
    contracts.Deployable,
    TEXT,
    TEXT,
    st.integers(min_value=0, max_value=64),
    OPT,
    OPT,
    st.lists(HANDLES, max_size=3),
)
DEVICES = st.builds(
    contracts.AcceleratorDevice,
    TEXT,
    st.sampled_from(contracts.DEVICE_TYPES),
    TEXT,
    TEXT,
    TEXT,
    OPT,
    OPT,
    OPT,
    st.lists(DEPLOYABLES, max_size=3),
)
ARQS = st.builds(contracts.AgentArq, TEXT, TEXT, HANDLES, OPT)


@hypothesis.given(DEVICES)
def test_a_device_survives_its_primitive(device):
    primitive = device.to_primitive()
    assert primitive[base.VERSION_KEY] == '1.0'
    assert contracts.AcceleratorDevice.from_primitive(primitive) == device


@hypothesis.given(ARQS)
def test_an_arq_survives_its_primitive(arq):
    assert contracts.AgentArq.from_primitive(arq.to_primitive()) == arq


def _arq():
    return {
        'uuid': 'a',
        'device_rp_uuid': 'rp',
        'instance_uuid': 'i',
        'attach_handle': {
            'uuid': 'h',
            'attach_type': 'PCI',
            'attach_info': '{}',
        },
    }


def test_an_unversioned_arq_is_read_as_1_0():
    arq = contracts.AgentArq.from_primitive(_arq())
    assert arq.attach_handle.uuid == 'h' and arq.attach_handle.in_use is False


def test_a_newer_minor_keeps_its_new_fields():
    primitive = dict(_arq(), **{base.VERSION_KEY: '1.4', 'bitstream': 'b'})
    arq = contracts.AgentArq.from_primitive(primitive)
    assert arq.extra == {'bitstream': 'b'}
    assert arq.to_primitive()['bitstream'] == 'b'


@pytest.mark.parametrize(
    'change,needle',
    [
        ({base.VERSION_KEY: '2.0'}, 'not compatible'),
        ({'uuid': 3}, 'uuid must be str'),
        ({'device_rp_uuid': None}, 'device_rp_uuid must be str'),
        ({'attach_handle': 'pci'}, 'must be a JSON object'),
        ({'attach_handle': {'uuid': 'h'}}, 'attach_type must be str'),
    ],
)
def test_a_malformed_arq_is_refused(change, needle):
    with pytest.raises(base.MalformedPrimitive, match=needle):
        contracts.AgentArq.from_primitive(dict(_arq(), **change))


@pytest.mark.parametrize(
    'device,needle',
    [
        ({'type': 'FPGA'}, 'uuid must be str'),
        ({'uuid': 'x', 'type': 'NPU'}, "type is 'NPU'"),
        (
            {
                'uuid': 'x',
                'type': 'GPU',
                'vendor': 'v',
                'model': 'm',
                'hostname': 'h',
                'deployables': [{'uuid': 'd', 'name': 'n'}],
            },
            'num_accelerators must be int',
        ),
        (
            {
                'uuid': 'x',
                'type': 'GPU',
                'vendor': 'v',
                'model': 'm',
                'hostname': 'h',
                'deployables': 'd',
            },
            'deployables must be list',
        ),
    ],
)
def test_a_malformed_device_is_refused(device, needle):
    with pytest.raises(base.MalformedPrimitive, match=needle):
        contracts.AcceleratorDevice.from_primitive(device)
