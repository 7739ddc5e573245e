"""Every contract survives its own wire form, and old primitives load."""

from hypothesis import given
from hypothesis import strategies as st
import pytest

from nimbus.common.objects import VERSION_KEY
from nimbus.common.objects import BuildRequest
from nimbus.common.objects import Flavor
from nimbus.common.objects import ImageMeta
from nimbus.common.objects import InstanceGroup
from nimbus.common.objects import InstanceUpdate
from nimbus.common.objects import MalformedPrimitive
from nimbus.common.objects import RequestSpec
from nimbus.common.objects import Selection
from nimbus.common.objects import instance_update

text = st.text(max_size=8)
maybe_text = st.none() | text
json_leaf = st.none() | st.booleans() | st.integers() | text
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3)
    ),
    max_leaves=6,
)
json_dict = st.dictionaries(text, json_value, max_size=3)
ints = st.integers(min_value=1, max_value=1000)

flavors = st.builds(
    Flavor,
    name=text,
    flavorid=text,
    vcpus=ints,
    memory_mb=ints,
    root_gb=ints,
    ephemeral_gb=ints,
    swap=ints,
    extra_specs=st.dictionaries(text, text, max_size=3),
)
images = st.none() | st.builds(
    ImageMeta, id=maybe_text, name=maybe_text, properties=json_dict
)
groups = st.none() | st.builds(
    InstanceGroup,
    uuid=maybe_text,
    name=maybe_text,
    policy=maybe_text,
    rules=json_dict,
    members=st.lists(text, max_size=3),
    hosts=st.lists(text, max_size=3),
)


@st.composite
def request_specs(draw):
    uuids = draw(st.lists(text, max_size=4))
    num = draw(st.integers(min_value=max(1, len(uuids)), max_value=9))
    return RequestSpec(
        instance_uuids=uuids,
        num_instances=num,
        min_count=draw(st.integers(min_value=1, max_value=num)),
        project_id=draw(maybe_text),
        user_id=draw(maybe_text),
        flavor=draw(flavors),
        image=draw(images),
        availability_zone=draw(maybe_text),
        scheduler_hints=draw(json_dict),
        instance_group=draw(groups),
        requested_resources=draw(st.lists(json_dict, max_size=2)),
        device_profile=draw(maybe_text),
        is_bfv=draw(st.booleans()),
        ignore_hosts=draw(st.lists(text, max_size=2)),
        force_hosts=draw(st.lists(text, max_size=2)),
        force_nodes=draw(st.lists(text, max_size=2)),
        retry=draw(st.none() | json_dict),
        request_id=draw(maybe_text),
        extra=draw(st.dictionaries(st.just('future_field'), json_value)),
    )


selections = st.builds(
    Selection,
    service_host=text,
    allocation_request=st.none() | json_dict,
    nodename=maybe_text,
    compute_node_uuid=maybe_text,
    cell_uuid=maybe_text,
    allocation_request_version=maybe_text,
    limits=json_dict,
    availability_zone=maybe_text,
    extra=st.dictionaries(st.just('future_field'), json_value),
)

build_requests = st.builds(
    BuildRequest,
    uuid=text,
    project_id=text,
    flavor=json_dict,
    user_id=maybe_text,
    display_name=maybe_text,
    power_state=st.none() | st.integers(),
    launch_index=st.none() | st.integers(),
    metadata=st.dictionaries(text, text, max_size=2),
    tags=st.lists(text, max_size=2),
    created_at=maybe_text,
)


@st.composite
def instance_updates(draw):
    values = {}
    for name, kind in instance_update._TYPES.items():
        if not draw(st.booleans()):
            continue
        if kind is str:
            value = draw(text if name == 'vm_state' else maybe_text)
        elif kind is int:
            value = draw(st.none() | st.integers())
        elif kind is bool:
            value = draw(st.booleans())
        elif kind is list:
            value = draw(st.lists(text, max_size=2))
        else:
            value = draw(st.none() | json_dict)
        values[name] = value
    return InstanceUpdate(**values)


@given(request_specs())
def test_request_spec_round_trip(spec):
    assert RequestSpec.from_primitive(spec.to_primitive()) == spec


@given(selections)
def test_selection_round_trip(selection):
    assert Selection.from_primitive(selection.to_primitive()) == selection


@given(build_requests)
def test_build_request_round_trip(request):
    assert BuildRequest.from_primitive(request.to_primitive()) == request


@given(instance_updates())
def test_instance_update_round_trip(update):
    assert InstanceUpdate.from_primitive(update.to_primitive()) == update


def test_primitives_carry_their_version():
    sel = Selection(service_host='h', allocation_request={})
    assert sel.to_primitive()[VERSION_KEY] == Selection.VERSION == '1.0'
    assert InstanceUpdate(vm_state='active').to_primitive() == {
        VERSION_KEY: '1.0',
        'vm_state': 'active',
    }


def test_old_primitives_without_a_version_load():
    old = {'service_host': 'h', 'allocation_request': {'allocations': {}}}
    assert Selection.from_primitive(old).service_host == 'h'
    spec = RequestSpec.from_primitive({'flavor': {'vcpus': 1}})
    assert spec.flavor.vcpus == 1 and spec.extra == {}
    assert InstanceUpdate.from_primitive({'task_state': None}).changes() == {
        'task_state': None
    }


@pytest.mark.parametrize(
    'convert, primitive',
    [
        (Selection.from_primitive, {'service_host': 1}),
        (Selection.from_primitive, 'garbage'),
        (Selection.from_primitive, {'service_host': 'h', VERSION_KEY: '2.0'}),
        (Selection.from_primitive, {'service_host': 'h', VERSION_KEY: 'x'}),
        (RequestSpec.from_primitive, {'flavor': 'm1.tiny'}),
        (RequestSpec.from_primitive, {'flavor': {'vcpus': 'many'}}),
        (RequestSpec.from_primitive, {'flavor': {}, VERSION_KEY: '2.1'}),
        (InstanceUpdate.from_primitive, {'project_id': 'stolen'}),
        (InstanceUpdate.from_primitive, {'vm_state': None}),
        (InstanceUpdate.from_primitive, {'power_state': 'on'}),
        (BuildRequest.from_primitive, {'uuid': 'u'}),
    ],
)
def test_malformed_primitives_are_refused(convert, primitive):
    with pytest.raises(MalformedPrimitive):
        convert(primitive)
