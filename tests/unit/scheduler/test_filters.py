import json

from nimbus.scheduler.filters import (
    affinity,
    aggregate,
    capabilities,
    compute,
    json_filter,
)
from nimbus.scheduler.filters import all_filters
from nimbus.scheduler import testing

from .conftest import host


def agg(meta, hosts=('host-1',), uuid='a1'):
    return {'uuid': uuid, 'name': uuid, 'hosts': list(hosts), 'metadata': meta}


def passes(cls, conf, h, spec):
    f = cls(conf)
    return (not f.is_enabled_for(spec)) or f.host_passes(h, spec)


def test_all_filters_listed():
    names = {c.__name__ for c in all_filters()}
    assert len(names) == 27 and 'NUMATopologyFilter' in names


def test_all_hosts_and_compute(conf):
    s = testing.spec()
    assert passes(compute.AllHostsFilter, conf, host(), s)
    assert passes(compute.ComputeFilter, conf, host(), s)
    assert not passes(
        compute.ComputeFilter, conf, host(service_disabled=True), s
    )
    assert not passes(compute.ComputeFilter, conf, host(service_up=False), s)
    f = compute.ComputeFilter(conf)
    assert (
        f.filter_all([host(), host(service_up=False)], s)[0].host == 'host-1'
    )
    assert 'down' in f.reject_reason(host(service_up=False), s)


def test_availability_zone(conf):
    s = testing.spec(availability_zone='az1,az2')
    h_az2 = host(aggregates=[agg({'availability_zone': 'az2'})])
    assert passes(compute.AvailabilityZoneFilter, conf, h_az2, s)
    assert not passes(
        compute.AvailabilityZoneFilter, conf, host(), s
    )  # default 'nova'
    f = compute.AvailabilityZoneFilter(conf)
    assert [h.host for h in f.filter_all([h_az2, host('h2')], s)] == ['host-1']
    assert passes(compute.AvailabilityZoneFilter, conf, host(), testing.spec())


def test_capabilities_scopes_and_attributes(conf):
    C = capabilities.ComputeCapabilitiesFilter
    s = testing.spec(
        extra_specs={
            'capabilities:cpu_info:features': '<all-in> aes avx',
            'hw:cpu_policy': 'shared',  # other scope ignored
            'free_ram_mb': '>= 1024',
            'not_an_attr': 'x',
        }
    )
    assert passes(C, conf, host(), s)
    s2 = testing.spec(
        extra_specs={'capabilities:cpu_info:features': '<in> avx512'}
    )
    assert not passes(C, conf, host(), s2)
    assert 'avx512' in C(conf).reject_reason(host(), s2)
    s3 = testing.spec(
        extra_specs={
            'capabilities:hypervisor_type': 's== QEMU',
            'vcpus_total': '= 16',
            'hypervisor_version': '>= 7000000',
        }
    )
    assert passes(C, conf, host(), s3)
    assert not passes(C, conf, host(vcpus=8), s3)
    assert not C(conf).is_enabled_for(
        testing.spec(extra_specs={'hw:foo': 'bar'})
    )
    assert len(C(conf).filter_all([host(), host('h2', vcpus=8)], s3)) == 1


def test_capabilities_fall_back_to_stats(conf):
    """An unscoped key that is no HostState attribute is matched against the host's
    stats, as Nova does; hosts that do not report that stat ignore it."""
    C = capabilities.ComputeCapabilitiesFilter
    t4 = host('t4', stats={'gpu_model': 't4', 'gpu_count': '4'})
    a100 = host('a100', stats={'gpu_model': 'a100', 'gpu_count': '8'})
    plain = host('plain')
    s = testing.spec(extra_specs={'gpu_model': 's== t4'})
    assert C(conf).is_enabled_for(s)
    assert [h.host for h in C(conf).filter_all([t4, a100, plain], s)] == [
        't4',
        'plain',
    ]
    assert passes(C, conf, t4, s) and not passes(C, conf, a100, s)
    assert passes(C, conf, plain, s)
    assert (
        C(conf).reject_reason(a100, s)
        == "stats gpu_model is 'a100', needs 's== t4'"
    )
    # numeric operators work on stats too
    s2 = testing.spec(extra_specs={'gpu_count': '>= 6'})
    assert [h.host for h in C(conf).filter_all([t4, a100], s2)] == ['a100']
    # scoped keys fall back to stats for names that are no attribute
    s3 = testing.spec(
        extra_specs={'capabilities:gpu_model': '<or> a100 <or> h100'}
    )
    assert [h.host for h in C(conf).filter_all([t4, a100, plain], s3)] == [
        'a100'
    ]
    # an attribute wins over a stat of the same name
    shadow = host('shadow', stats={'hypervisor_type': 'XEN'})
    assert passes(
        C,
        conf,
        shadow,
        testing.spec(extra_specs={'hypervisor_type': 's== QEMU'}),
    )


def test_image_properties(conf):
    F = capabilities.ImagePropertiesFilter
    s = testing.spec(
        image_props={
            'hw_architecture': 'x86_64',
            'img_hv_type': 'kvm',
            'hw_vm_mode': 'hvm',
        }
    )
    assert passes(F, conf, host(), s)
    assert not passes(
        F, conf, host(supported_instances=[['aarch64', 'qemu', 'hvm']]), s
    )
    assert not passes(F, conf, host(supported_instances=[]), s)
    v = testing.spec(image_props={'img_hv_requested_version': '>= 8000000'})
    assert not passes(F, conf, host(), v)
    assert passes(F, conf, host(hypervisor_version=8002000), v)
    assert not F(conf).is_enabled_for(testing.spec())


def test_aggregate_instance_extra_specs(conf):
    F = aggregate.AggregateInstanceExtraSpecsFilter
    s = testing.spec(
        extra_specs={
            'aggregate_instance_extra_specs:ssd': 'true',
            'hw:foo': 'ignored',
        }
    )
    assert passes(F, conf, host(aggregates=[agg({'ssd': 'true'})]), s)
    assert passes(F, conf, host(aggregates=[agg({'ssd': 'false,true'})]), s)
    assert not passes(F, conf, host(aggregates=[agg({'ssd': 'false'})]), s)
    assert not passes(F, conf, host(), s)
    s2 = testing.spec(extra_specs={'gpus': '>= 2'})
    assert passes(F, conf, host(aggregates=[agg({'gpus': '4'})]), s2)


def test_aggregate_resource_filters_min_wins(conf):
    two = [
        agg(
            {
                'cpu_allocation_ratio': '2.0',
                'ram_allocation_ratio': '1.5',
                'disk_allocation_ratio': '3',
            },
            uuid='a',
        ),
        agg({'cpu_allocation_ratio': '1.0'}, uuid='b'),
    ]
    h = host(vcpus=4, memory_mb=1000, local_gb=10, aggregates=two)
    assert passes(
        aggregate.AggregateCoreFilter, conf, h, testing.spec(vcpus=4)
    )
    assert not passes(
        aggregate.AggregateCoreFilter, conf, h, testing.spec(vcpus=5)
    )
    assert passes(
        aggregate.AggregateRamFilter, conf, h, testing.spec(memory_mb=1500)
    )
    assert not passes(
        aggregate.AggregateRamFilter, conf, h, testing.spec(memory_mb=1501)
    )
    assert passes(
        aggregate.AggregateDiskFilter, conf, h, testing.spec(root_gb=30)
    )
    assert not passes(
        aggregate.AggregateDiskFilter, conf, h, testing.spec(root_gb=31)
    )
    # no aggregate: host's own ratio
    assert not passes(
        aggregate.AggregateCoreFilter,
        conf,
        host(vcpus=4),
        testing.spec(vcpus=5),
    )
    assert 'needs 5' in aggregate.AggregateCoreFilter(conf).reject_reason(
        h, testing.spec(vcpus=5)
    )


def test_num_instances_and_io_ops(conf):
    s = testing.spec()
    assert passes(compute.NumInstancesFilter, conf, host(num_instances=49), s)
    assert not passes(
        compute.NumInstancesFilter, conf, host(num_instances=50), s
    )
    assert passes(compute.IoOpsFilter, conf, host(num_io_ops=7), s)
    assert not passes(compute.IoOpsFilter, conf, host(num_io_ops=8), s)
    aggs = [
        agg(
            {'max_instances_per_host': '5', 'max_io_ops_per_host': '3'},
            uuid='a',
        ),
        agg({'max_instances_per_host': '10'}, uuid='b'),
    ]
    assert not passes(
        aggregate.AggregateNumInstancesFilter,
        conf,
        host(num_instances=5, aggregates=aggs),
        s,
    )
    assert passes(
        aggregate.AggregateNumInstancesFilter, conf, host(num_instances=49), s
    )
    assert not passes(
        aggregate.AggregateIoOpsFilter,
        conf,
        host(num_io_ops=3, aggregates=aggs),
        s,
    )
    assert passes(
        aggregate.AggregateIoOpsFilter,
        conf,
        host(num_io_ops=2, aggregates=aggs),
        s,
    )


def test_isolated_hosts(conf):
    conf.set_override('isolated_images', ['img-1'], 'filter_scheduler')
    conf.set_override('isolated_hosts', ['iso'], 'filter_scheduler')
    F = compute.IsolatedHostsFilter
    iso_img, other_img = testing.spec(), testing.spec()
    other_img.image.id = 'img-2'
    assert passes(F, conf, host('iso'), iso_img)
    assert not passes(F, conf, host('plain'), iso_img)
    assert not passes(F, conf, host('iso'), other_img)
    assert passes(F, conf, host('plain'), other_img)
    conf.set_override(
        'restrict_isolated_hosts_to_isolated_images', False, 'filter_scheduler'
    )
    assert passes(F, conf, host('iso'), other_img)
    assert not passes(F, conf, host('plain'), iso_img)


def test_json_filter(conf):
    F = json_filter.JsonFilter
    q = json.dumps(
        [
            'and',
            ['>=', '$free_ram_mb', 1024],
            ['>=', '$free_disk_mb', 200 * 1024],
        ]
    )
    s = testing.spec(scheduler_hints={'query': q})
    assert passes(F, conf, host(), s)
    assert not passes(F, conf, host(local_gb=100), s)
    for query, ok in [
        (['=', '$hypervisor_type', 'QEMU'], True),
        (['<', '$vcpus_total', 8], False),
        (['>', '$vcpus_total', 8], True),
        (['in', '$host', 'host-1', 'host-2'], True),
        (['<=', '$num_instances', 0], True),
        (['not', ['=', '$host', 'host-1']], False),
        (['or', ['=', '$host', 'x'], ['=', '$host', 'host-1']], True),
        (['=', '$cpu_info.arch', 'x86_64'], True),
        (['>=', '$nonexistent', 1], False),
    ]:
        assert (
            passes(
                F,
                conf,
                host(),
                testing.spec(scheduler_hints={'query': json.dumps(query)}),
            )
            is ok
        ), query
    bad = testing.spec(scheduler_hints={'query': 'not json'})
    assert not passes(F, conf, host(), bad)
    assert 'not JSON' in F(conf).reject_reason(host(), bad)
    assert not F(conf).is_enabled_for(testing.spec())


def test_same_different_host(conf):
    s = testing.spec(
        scheduler_hints={'same_host': ['i1'], 'different_host': ['i2']}
    )
    assert passes(affinity.SameHostFilter, conf, host(instances=['i1']), s)
    assert not passes(affinity.SameHostFilter, conf, host(instances=['i2']), s)
    assert passes(
        affinity.DifferentHostFilter, conf, host(instances=['i1']), s
    )
    assert not passes(
        affinity.DifferentHostFilter, conf, host(instances=['i2']), s
    )


def test_simple_cidr(conf):
    s = testing.spec(
        scheduler_hints={'build_near_host_ip': '10.0.0.200', 'cidr': '/24'}
    )
    assert passes(
        affinity.SimpleCIDRAffinityFilter, conf, host(host_ip='10.0.0.9'), s
    )
    assert not passes(
        affinity.SimpleCIDRAffinityFilter, conf, host(host_ip='10.0.1.9'), s
    )


def test_retry(conf):
    s = testing.spec(
        retry={'num_attempts': 1, 'hosts': [['host-1', 'host-1']]}
    )
    assert not passes(compute.RetryFilter, conf, host(), s)
    assert passes(compute.RetryFilter, conf, host('host-2'), s)


def test_type_affinity_and_tenancy(conf):
    s = testing.spec(flavor_name='m1.small')
    assert passes(
        aggregate.AggregateTypeAffinityFilter,
        conf,
        host(aggregates=[agg({'instance_type': 'm1.nano,m1.small'})]),
        s,
    )
    assert not passes(
        aggregate.AggregateTypeAffinityFilter,
        conf,
        host(aggregates=[agg({'instance_type': 'm1.nano'})]),
        s,
    )
    assert passes(aggregate.AggregateTypeAffinityFilter, conf, host(), s)
    T = aggregate.AggregateMultiTenancyIsolation
    assert passes(
        T, conf, host(aggregates=[agg({'filter_tenant_id': 'p0,p1'})]), s
    )
    assert passes(
        T, conf, host(aggregates=[agg({'filter_tenant_id_2': 'p1'})]), s
    )
    assert not passes(
        T, conf, host(aggregates=[agg({'filter_tenant_id': 'p2'})]), s
    )
    assert passes(T, conf, host(), s)


def test_aggregate_image_properties_isolation(conf):
    F = aggregate.AggregateImagePropertiesIsolation
    s = testing.spec(image_props={'os_distro': 'ubuntu'})
    assert passes(
        F, conf, host(aggregates=[agg({'os_distro': 'ubuntu,debian'})]), s
    )
    assert not passes(
        F, conf, host(aggregates=[agg({'os_distro': 'windows'})]), s
    )
    assert passes(F, conf, host(aggregates=[agg({'other': 'x'})]), s)
    conf.set_override(
        'aggregate_image_properties_isolation_namespace',
        'ns',
        'filter_scheduler',
    )
    assert passes(F, conf, host(aggregates=[agg({'os_distro': 'windows'})]), s)
    s2 = testing.spec(image_props={'ns.os': 'a'})
    assert not passes(F, conf, host(aggregates=[agg({'ns.os': 'b'})]), s2)


def test_metrics_filter(conf):
    conf.set_override('weight_setting', ['cpu.freq=1.0'], 'metrics')
    assert passes(
        compute.MetricsFilter,
        conf,
        host(metrics={'cpu.freq': 2.0}),
        testing.spec(),
    )
    assert not passes(compute.MetricsFilter, conf, host(), testing.spec())


def _group(policy, members=(), hosts=(), rules=None):
    return {
        'uuid': 'g1',
        'name': 'g',
        'policy': policy,
        'rules': rules or {},
        'members': list(members),
        'hosts': list(hosts),
    }


def test_server_group_anti_affinity_max_per_host(conf):
    F = affinity.ServerGroupAntiAffinityFilter
    s = testing.spec(instance_group=_group('anti-affinity', ['m1', 'm2']))
    assert passes(F, conf, host(instances=['x']), s)
    assert not passes(F, conf, host(instances=['m1']), s)
    s2 = testing.spec(
        instance_group=_group(
            'anti-affinity', ['m1', 'm2'], rules={'max_server_per_host': 2}
        )
    )
    assert passes(F, conf, host(instances=['m1']), s2)
    assert not passes(F, conf, host(instances=['m1', 'm2']), s2)
    f = F(conf)
    assert (
        len(f.filter_all([host(instances=['m1', 'm2']), host('h2')], s2)) == 1
    )
    assert 'max 2' in f.reject_reason(host(instances=['m1', 'm2']), s2)
    assert not F(conf).is_enabled_for(testing.spec())


def test_server_group_affinity(conf):
    F = affinity.ServerGroupAffinityFilter
    s = testing.spec(instance_group=_group('affinity', ['m1'], ['host-2']))
    assert passes(F, conf, host('host-2'), s)
    assert not passes(F, conf, host('host-1'), s)
    assert passes(
        F,
        conf,
        host('host-1'),
        testing.spec(instance_group=_group('affinity')),
    )
