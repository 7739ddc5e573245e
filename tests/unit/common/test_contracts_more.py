"""The contracts of the compute node record, the built instance and the
scheduler's cache events: round trips, old dicts, malformed ones."""

from hypothesis import given
from hypothesis import strategies as st
import pytest

from nimbus.common.objects import VERSION_KEY
from nimbus.common.objects import AggregateInfo
from nimbus.common.objects import ComputeNodeRecord
from nimbus.common.objects import Instance
from nimbus.common.objects import InstanceInfo
from nimbus.common.objects import MalformedPrimitive
from nimbus.common.objects import ServerGroupInfo
from nimbus.common.objects import ServiceInfo

text = st.text(max_size=8)
maybe_text = st.none() | text
ints = st.integers(min_value=0, max_value=10**6)
json_dict = st.dictionaries(text, st.none() | text | ints, max_size=3)

instances = st.builds(
    Instance,
    uuid=text,
    display_name=maybe_text,
    project_id=maybe_text,
    host=maybe_text,
    node=maybe_text,
    vm_state=maybe_text,
    task_state=maybe_text,
    power_state=st.none() | ints,
    flavor=json_dict,
    image_ref=maybe_text,
    metadata=st.dictionaries(text, text, max_size=3),
    accel_uuids=st.lists(text, max_size=3),
    launched_at=maybe_text,
    deleted=st.booleans(),
)


@st.composite
def node_records(draw):
    values = draw(
        st.fixed_dictionaries(
            {},
            optional={
                'hypervisor_hostname': text,
                'hypervisor_version': ints,
                'vcpus': ints,
                'memory_mb_used': ints,
                'cpu_allocation_ratio': st.floats(0.1, 64),
                'numa_topology': json_dict,
                'stats': st.dictionaries(text, text, max_size=3),
                'failed_builds': ints,
            },
        )
    )
    return ComputeNodeRecord.of(draw(text), draw(text), **values)


events = st.one_of(
    st.builds(
        InstanceInfo,
        uuid=text,
        flavor_id=maybe_text,
        group_uuid=maybe_text,
        image_ref=maybe_text,
        image_properties=st.none() | json_dict,
    ),
    st.builds(
        AggregateInfo,
        id=st.none() | ints,
        uuid=maybe_text,
        name=maybe_text,
        hosts=st.lists(text, max_size=3),
        metadata=st.dictionaries(text, text, max_size=3),
    ),
    st.builds(
        ServiceInfo,
        host=text,
        binary=maybe_text,
        disabled=st.booleans(),
        disabled_reason=maybe_text,
        forced_down=st.booleans(),
        up=st.none() | st.booleans(),
    ),
    st.builds(
        ServerGroupInfo,
        uuid=text,
        name=maybe_text,
        policy=maybe_text,
        rules=json_dict,
        members=st.lists(text, max_size=3),
    ),
)


@pytest.mark.slow
@given(instances)
def test_instance_round_trip(instance):
    assert Instance.from_primitive(instance.to_primitive()) == instance


@given(node_records())
def test_node_record_round_trip(record):
    assert ComputeNodeRecord.from_primitive(record.to_primitive()) == record


@given(events)
def test_cache_event_round_trip(event):
    assert type(event).from_primitive(event.to_primitive()) == event


def test_primitives_carry_their_version():
    for obj in (
        Instance(uuid='u'),
        ComputeNodeRecord.of('u', 'h'),
        InstanceInfo(uuid='u'),
        AggregateInfo(id=1),
        ServiceInfo(host='h'),
        ServerGroupInfo(uuid='g'),
    ):
        assert obj.to_primitive()[VERSION_KEY] == '1.0'


def test_the_dicts_sent_before_the_contracts_still_load():
    # The cell's record as the conductors sent it (no version key).
    instance = Instance.from_primitive(
        {
            'uuid': 'u',
            'display_name': 'vm',
            'project_id': 'p',
            'flavor': {'vcpus': 1},
            'accel_uuids': [],
            'metadata': {},
            'deleted': False,
            'created_at': '2026-11-25T12:00:00',
        }
    )
    assert (instance.uuid, instance.flavor, instance.extra) == (
        'u',
        {'vcpus': 1},
        {},
    )
    # A failed build's report sets only what it names.
    record = ComputeNodeRecord.from_primitive(
        {'uuid': 'rp', 'host': 'h', 'failed_builds': 2}
    )
    assert record.values == {'failed_builds': 2}
    info = InstanceInfo.from_primitive({'uuid': 'u', 'flavor_id': 'f'})
    assert info.to_cache() == {
        'uuid': 'u',
        'flavor_id': 'f',
        'group_uuid': None,
        'image_ref': None,
        'image_properties': None,
    }
    service = ServiceInfo.from_primitive({'host': 'h', 'disabled': True})
    assert service.to_cache()['disabled'] is True
    assert service.up is None


def test_newer_minor_keys_are_kept_and_passed_on():
    primitive = {VERSION_KEY: '1.3', 'uuid': 'g', 'colour': 'blue'}
    group = ServerGroupInfo.from_primitive(primitive)
    assert group.extra == {'colour': 'blue'}
    assert group.to_primitive()['colour'] == 'blue'
    record = ComputeNodeRecord.from_primitive(
        {'uuid': 'rp', 'host': 'h', 'gpu_count': 2}
    )
    assert record.values == {} and record.extra == {'gpu_count': 2}


@pytest.mark.parametrize(
    'convert, primitive',
    [
        (Instance.from_primitive, {'display_name': 'no uuid'}),
        (Instance.from_primitive, {'uuid': 'u', 'flavor': 'm1.small'}),
        (Instance.from_primitive, {'uuid': 'u', VERSION_KEY: '2.0'}),
        (ComputeNodeRecord.from_primitive, {'uuid': 'rp'}),
        (ComputeNodeRecord.from_primitive, 'x'),
        (
            ComputeNodeRecord.from_primitive,
            {'uuid': 'rp', 'host': 'h', 'stats': {'rack': 1}},
        ),
        (
            ComputeNodeRecord.from_primitive,
            {'uuid': 'rp', 'host': 'h', 'vcpus': '8'},
        ),
        (InstanceInfo.from_primitive, {'flavor_id': 'f'}),
        (AggregateInfo.from_primitive, {'id': 1, 'hosts': 'host-1'}),
        (ServiceInfo.from_primitive, {'binary': 'nimbus-compute'}),
        (ServiceInfo.from_primitive, {'host': 'h', 'disabled': 'yes'}),
        (ServerGroupInfo.from_primitive, {'uuid': 'g', 'members': 'u1'}),
    ],
)
def test_malformed_primitives_are_refused(convert, primitive):
    with pytest.raises(MalformedPrimitive):
        convert(primitive)


def test_a_record_names_only_node_fields():
    with pytest.raises(ValueError, match='colour'):
        ComputeNodeRecord.of('rp', 'h', colour='blue')
