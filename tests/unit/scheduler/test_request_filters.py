import pytest

from nimbus.scheduler import exception, request_filters, testing

AGGS = [
    {'uuid': 'agg-az1', 'metadata': {'availability_zone': 'az1'}},
    {'uuid': 'agg-az1b', 'metadata': {'availability_zone': 'az1'}},
    {'uuid': 'agg-az2', 'metadata': {'availability_zone': 'az2'}},
    {'uuid': 'agg-t', 'metadata': {'filter_tenant_id': 'p1,p9'}},
    {'uuid': 'agg-gpu', 'metadata': {'trait:CUSTOM_GPU': 'required'}},
]


def test_plain_flavor(conf):
    q = request_filters.build_query(
        testing.spec(vcpus=2, memory_mb=4096, root_gb=20), conf
    )
    assert q == [
        ('resources', 'DISK_GB:20,MEMORY_MB:4096,VCPU:2'),
        ('root_required', '!COMPUTE_STATUS_DISABLED'),
        ('limit', '1000'),
    ]


def test_bfv_and_dedicated(conf):
    sp = testing.spec(
        vcpus=2,
        memory_mb=512,
        root_gb=20,
        is_bfv=True,
        extra_specs={'hw:cpu_policy': 'dedicated'},
    )
    assert request_filters.build_query(sp, conf)[0] == (
        'resources',
        'MEMORY_MB:512,PCPU:2',
    )


def test_granular_resources_traits_policy(conf):
    sp = testing.spec(
        extra_specs={
            'resources1:CUSTOM_PGPU': '1',
            'trait1:CUSTOM_FAST': 'required',
            'resources2:SRIOV_NET_VF': '2',
            'trait2:CUSTOM_SLOW': 'forbidden',
            'trait:HW_CPU_X86_AVX2': 'required',
            'resources:VCPU': '0',
            'group_policy': 'isolate',
        },
        image_props={'trait:CUSTOM_IMG': 'required'},
    )
    q = request_filters.build_query(sp, conf)
    assert ('resources', 'DISK_GB:20,MEMORY_MB:4096') in q
    assert ('required', 'CUSTOM_IMG,HW_CPU_X86_AVX2') in q
    assert ('resources1', 'CUSTOM_PGPU:1') in q and (
        'required1',
        'CUSTOM_FAST',
    ) in q
    assert ('resources2', 'SRIOV_NET_VF:2') in q and (
        'required2',
        '!CUSTOM_SLOW',
    ) in q
    assert ('group_policy', 'isolate') in q


def test_bad_trait_value(conf):
    with pytest.raises(exception.InvalidRequest):
        request_filters.build_query(
            testing.spec(extra_specs={'trait:X': 'maybe'}), conf
        )


def test_availability_zone_member_of(conf):
    q = request_filters.build_query(
        testing.spec(availability_zone='az1'), conf, AGGS
    )
    assert ('member_of', 'in:agg-az1,agg-az1b') in q
    assert not any(
        k == 'member_of'
        for k, _ in request_filters.build_query(
            testing.spec(availability_zone='nova'), conf, AGGS
        )
    )
    with pytest.raises(exception.NoValidHost):
        request_filters.build_query(
            testing.spec(availability_zone='nowhere'), conf, AGGS
        )


def test_tenant_and_isolated_aggregates(conf):
    conf.set_override(
        'limit_tenants_to_placement_aggregate', True, 'scheduler'
    )
    conf.set_override('enable_isolated_aggregate_filtering', True, 'scheduler')
    q = request_filters.build_query(testing.spec(project_id='p9'), conf, AGGS)
    assert ('member_of', 'in:agg-t') in q and ('member_of', '!in:agg-gpu') in q
    q = request_filters.build_query(
        testing.spec(
            project_id='px', extra_specs={'trait:CUSTOM_GPU': 'required'}
        ),
        conf,
        AGGS,
    )
    assert not any(k == 'member_of' for k, _ in q)
    conf.set_override(
        'placement_aggregate_required_for_tenants', True, 'scheduler'
    )
    with pytest.raises(exception.NoValidHost):
        request_filters.build_query(testing.spec(project_id='px'), conf, AGGS)


def test_device_profiles_and_limit(conf):
    conf.set_override('max_placement_results', 50, 'scheduler')
    sp = testing.spec(
        requested_resources=[
            {
                'requester_id': 'device_profile_0',
                'resources': {'FPGA': 1},
                'required_traits': ['CUSTOM_INTEL'],
                'forbidden_traits': [],
            },
            {'requester_id': 'device_profile_1', 'resources': {'PGPU': 1}},
        ]
    )
    q = request_filters.build_query(sp, conf)
    assert ('resources_device_profile_0', 'FPGA:1') in q
    assert ('required_device_profile_0', 'CUSTOM_INTEL') in q
    assert ('resources_device_profile_1', 'PGPU:1') in q
    assert ('group_policy', 'none') in q and q[-1] == ('limit', '50')
    assert (
        'root_required',
        'COMPUTE_ACCELERATORS,!COMPUTE_STATUS_DISABLED',
    ) in q


def test_image_type(conf):
    conf.set_override(
        'query_placement_for_image_type_support', True, 'scheduler'
    )
    q = request_filters.build_query(
        testing.spec(image_props={'disk_format': 'qcow2'}), conf
    )
    assert (
        'root_required',
        'COMPUTE_IMAGE_TYPE_QCOW2,!COMPUTE_STATUS_DISABLED',
    ) in q


def test_device_profile_groups_numbered_among_themselves(conf):
    """Without requester ids the Nth device-profile group is device_profile_<N> from 0,
    whatever other groups the flavor has (the unnumbered one, resources1...)."""
    sp = testing.spec(
        extra_specs={
            'resources1:CUSTOM_X': '1',
            'resources_NET:SRIOV_NET_VF': '1',
        },
        requested_resources=[
            {'resources': {'CUSTOM_FPGA': 1}},
            {
                'resources': {'CUSTOM_PGPU': 2},
                'required_traits': ['CUSTOM_GPU_T4'],
            },
        ],
    )
    q = request_filters.build_query(sp, conf)
    assert ('resources_device_profile_0', 'CUSTOM_FPGA:1') in q
    assert ('resources_device_profile_1', 'CUSTOM_PGPU:2') in q
    assert ('required_device_profile_1', 'CUSTOM_GPU_T4') in q
    assert not any(
        k.startswith('resources_device_profile_2')
        or k == 'resources_device_profile_3'
        for k, _v in q
    )
    assert ('group_policy', 'none') in q
