from nimbus.common.objects import VERSION_KEY
from nimbus.common.objects import RequestSpec

WIRE = {
    'instance_uuids': ['a', 'b'],
    'num_instances': 2,
    'min_count': 1,
    'project_id': 'p',
    'user_id': 'u',
    'flavor': {
        'name': 'm1',
        'flavorid': '1',
        'vcpus': 2,
        'memory_mb': 512,
        'root_gb': 1,
        'ephemeral_gb': 0,
        'swap': 0,
        'extra_specs': {'hw:numa_nodes': '1'},
    },
    'image': {
        'id': 'i',
        'name': 'cirros',
        'properties': {'hw_architecture': 'x86_64'},
    },
    'availability_zone': 'az1',
    'scheduler_hints': {'group': 'g', 'same_host': ['x'], 'query': '[]'},
    'instance_group': {
        'uuid': 'g',
        'name': 'grp',
        'policy': 'anti-affinity',
        'rules': {'max_server_per_host': 2},
        'members': ['m'],
        'hosts': ['h'],
    },
    'requested_resources': [
        {
            'requester_id': 'device_profile_0',
            'resources': {'FPGA': 1},
            'required_traits': [],
            'forbidden_traits': [],
        }
    ],
    'device_profile': 'dp',
    'is_bfv': True,
    'ignore_hosts': ['h2'],
    'force_hosts': [],
    'force_nodes': [],
    'retry': {'num_attempts': 1, 'hosts': [['h3', 'h3']]},
    'request_id': 'req-1',
}


def test_round_trip_exact():
    assert RequestSpec.from_primitive(WIRE).to_primitive() == dict(
        WIRE, **{VERSION_KEY: RequestSpec.VERSION}
    )


def test_unknown_keys_survive():
    d = dict(WIRE, future_field={'x': 1})
    assert RequestSpec.from_primitive(d).to_primitive()['future_field'] == {
        'x': 1
    }


def test_defaults_and_helpers():
    spec = RequestSpec.from_primitive(
        {
            'flavor': {'vcpus': 1},
            'image': None,
            'scheduler_hints': {'cidr': ['/24']},
        }
    )
    assert spec.num_instances == 1 and spec.min_count == 1
    assert spec.image_props == {}
    assert spec.get_hint('cidr') == '/24'
    assert spec.hint_list('different_host') == []
    assert spec.to_primitive()['image'] is None


def test_cache_not_on_wire():
    spec = RequestSpec.from_primitive(WIRE)
    spec.__dict__['_sched_cache'] = {'x': 1}
    assert '_sched_cache' not in spec.to_primitive()
