import pytest

from nimbus.scheduler.weighers import base as weigher_base
from nimbus.scheduler.weighers import affinity, misc, resources
from nimbus.scheduler.weighers import all_weighers, normalize
from nimbus.scheduler import testing

from .conftest import host


def test_seed_normalisation_table():
    free_vcpus = [5, 5, 10, 10, 15, 20, 20, 15, 10, 5]
    want = [0, 0, 0.33, 0.33, 0.67, 1, 1, 0.67, 0.33, 0]
    assert [round(x, 2) for x in normalize(free_vcpus)] == want


def test_seed_table_through_cpu_weigher(conf):
    hosts = [
        host(f'h{i}', vcpus=v)
        for i, v in enumerate([5, 5, 10, 10, 15, 20, 20, 15, 10, 5])
    ]
    detail = weigher_base.weigh_detail(
        hosts, [resources.CPUWeigher(conf)], testing.spec()
    )
    assert [
        round(d['weighers']['CPUWeigher']['normalized'], 2) for d in detail
    ] == [0, 0, 0.33, 0.33, 0.67, 1, 1, 0.67, 0.33, 0]


def test_all_equal_is_zero_and_empty():
    assert normalize([7, 7, 7]) == [0.0, 0.0, 0.0]
    assert normalize([]) == []


@pytest.mark.parametrize(
    'cls,option,default',
    [
        (resources.RAMWeigher, 'ram_weight_multiplier', 1.0),
        (resources.CPUWeigher, 'cpu_weight_multiplier', 1.0),
        (resources.DiskWeigher, 'disk_weight_multiplier', 1.0),
        (resources.IoOpsWeigher, 'io_ops_weight_multiplier', -1.0),
        (resources.PCIWeigher, 'pci_weight_multiplier', 1.0),
        (
            resources.NumInstancesWeigher,
            'num_instances_weight_multiplier',
            0.0,
        ),
        (
            affinity.ServerGroupSoftAffinityWeigher,
            'soft_affinity_weight_multiplier',
            1.0,
        ),
        (
            affinity.ServerGroupSoftAntiAffinityWeigher,
            'soft_anti_affinity_weight_multiplier',
            1.0,
        ),
        (
            misc.BuildFailureWeigher,
            'build_failure_weight_multiplier',
            1000000.0,
        ),
        (
            misc.CrossCellWeigher,
            'cross_cell_move_weight_multiplier',
            1000000.0,
        ),
        (
            misc.HypervisorVersionWeigher,
            'hypervisor_version_weight_multiplier',
            1.0,
        ),
        (misc.ImagePropertiesWeigher, 'image_props_weight_multiplier', 0.0),
        (misc.MetricsWeigher, 'weight_multiplier', 1.0),
    ],
)
def test_defaults_and_aggregate_override_min_wins(conf, cls, option, default):
    w = cls(conf)
    assert w.default_multiplier() == default
    key = w.override_key
    aggs = [
        {'uuid': 'a', 'hosts': ['host-1'], 'metadata': {key: '3.0'}},
        {'uuid': 'b', 'hosts': ['host-1'], 'metadata': {key: '2.5'}},
    ]
    assert w.weight_multiplier(host(aggregates=aggs)) == 2.5
    assert w.weight_multiplier(host()) == default


def test_metrics_defaults(conf):
    assert (
        conf.metrics.weight_of_unavailable == -10000.0
        and conf.metrics.required is True
    )
    assert (
        misc.MetricsWeigher(conf).override_key == 'metrics_weight_multiplier'
    )


def test_thirteen_weighers():
    assert len(all_weighers()) == 13


def test_raw_values(conf):
    h = host(
        vcpus=8,
        vcpus_used=2,
        memory_mb=1000,
        memory_mb_used=200,
        local_gb=10,
        num_io_ops=3,
        failed_builds=2,
        num_instances=4,
    )
    s = testing.spec()
    assert resources.RAMWeigher(conf).weigh(h, s) == 800
    assert resources.CPUWeigher(conf).weigh(h, s) == 6
    assert resources.DiskWeigher(conf).weigh(h, s) == 10 * 1024
    assert resources.IoOpsWeigher(conf).weigh(h, s) == 3
    assert resources.NumInstancesWeigher(conf).weigh(h, s) == 4
    assert misc.BuildFailureWeigher(conf).weigh(h, s) == -2
    assert misc.HypervisorVersionWeigher(conf).weigh(h, s) == 7000000
    for w in (resources.RAMWeigher(conf), resources.IoOpsWeigher(conf)):
        assert w.raw_values([h], s) == [w.weigh(h, s)]


def test_pci_weigher_prefers_fitting_hosts(conf):
    import json

    conf.set_override(
        'alias', [json.dumps({'name': 'nic', 'vendor_id': '8086'})], 'pci'
    )
    one = host('one', pci_stats=[{'vendor_id': '8086', 'count': 1}])
    many = host('many', pci_stats=[{'vendor_id': '8086', 'count': 8}])
    none = host('none')
    w = resources.PCIWeigher(conf)
    want1 = testing.spec(extra_specs={'pci_passthrough:alias': 'nic:1'})
    raw = w.raw_values([one, many, none], want1)
    assert raw[0] > raw[1]
    raw = w.raw_values([one, many, none], testing.spec())
    assert raw[2] > raw[0] > raw[1]


def test_soft_group_weighers(conf):
    g = {
        'uuid': 'g',
        'policy': 'soft-affinity',
        'members': ['m1', 'm2'],
        'hosts': [],
    }
    s = testing.spec(instance_group=g)
    h1, h2 = host('h1', instances=['m1', 'm2']), host('h2')
    assert affinity.ServerGroupSoftAffinityWeigher(conf).raw_values(
        [h1, h2], s
    ) == [2, 0]
    g['policy'] = 'soft-anti-affinity'
    s = testing.spec(instance_group=g)
    assert affinity.ServerGroupSoftAntiAffinityWeigher(conf).raw_values(
        [h1, h2], s
    ) == [-2, 0]
    assert not affinity.ServerGroupSoftAffinityWeigher(conf).is_enabled_for(s)


def test_metrics_weigher(conf):
    conf.set_override(
        'weight_setting', ['cpu.freq=1.0', 'cpu.load=-2.0'], 'metrics'
    )
    w = misc.MetricsWeigher(conf)
    s = testing.spec()
    assert w.weigh(host(metrics={'cpu.freq': 3.0, 'cpu.load': 1.0}), s) == 1.0
    assert w.weigh(host(metrics={'cpu.freq': 3.0}), s) == -10000.0


def test_cross_cell_and_image_props(conf):
    s = testing.spec(source_cell_uuid='cell-1')
    w = misc.CrossCellWeigher(conf)
    assert w.is_enabled_for(s) and not w.is_enabled_for(testing.spec())
    assert w.raw_values(
        [host(cell_uuid='cell-1'), host(cell_uuid='cell-2')], s
    ) == [1, 0]
    ip = misc.ImagePropertiesWeigher(conf)
    s = testing.spec(image_props={'os_distro': 'ubuntu'})
    h = host()
    h.set_instances(
        [{'uuid': 'x', 'image_properties': {'os_distro': 'ubuntu'}}]
    )
    assert ip.raw_values([h, host('h2')], s) == [1.0, 0.0]


def test_weighted_sum_with_override(conf):
    hs = [
        host('a', vcpus=4),
        host(
            'b',
            vcpus=8,
            aggregates=[
                {
                    'uuid': 'x',
                    'hosts': ['b'],
                    'metadata': {'cpu_weight_multiplier': '-5'},
                }
            ],
        ),
    ]
    d = weigher_base.weigh_detail(
        hs, [resources.CPUWeigher(conf)], testing.spec()
    )
    assert d[0]['weight'] == 0.0 and d[1]['weight'] == -5.0


def test_image_props_weigher_sees_earlier_instances_of_the_request(conf):
    """A placed instance carries its image's properties, so the next instance of a
    multi-create is drawn to it (positive multiplier packs alike instances)."""
    from nimbus.scheduler import selection

    conf.set_override(
        'image_props_weight_multiplier', 100.0, 'filter_scheduler'
    )
    hs = [host(f'h{i}', vcpus=16) for i in range(3)]
    sp = testing.spec(vcpus=1, num=4, image_props={'os_distro': 'ubuntu'})
    res = selection.FilterScheduler(conf).schedule(sp, hs)
    assert len({r[0].service_host for r in res}) == 1
    placed = next(h for h in hs if h.num_instances)
    assert all(
        i['image_properties'] == {'os_distro': 'ubuntu'}
        for i in placed.instances.values()
    )


def test_metrics_required_rejects_unweighable_hosts(conf):
    """[metrics] required = True: a host missing a configured metric cannot be weighed;
    it is rejected with the reason (Nova would fail the whole request)."""
    from nimbus.scheduler import exception, selection

    conf.set_override('weight_setting', ['cpu.freq=1.0'], 'metrics')
    hs = [
        host('full', metrics={'cpu.freq': 1.0}),
        host('bare', vcpus=64, metrics={}),
        host('other', metrics={'cpu.freq': 2.0}),
    ]
    sched = selection.FilterScheduler(conf)
    sp = testing.spec(vcpus=1, num=3, min_count=1)
    res = sched.schedule(sp, hs)
    assert 'bare' not in {s.service_host for r in res for s in r}
    dry = sched.dry_run(testing.spec(vcpus=1), hs)
    assert {
        'host': 'bare',
        'nodename': 'bare',
        'filter': 'MetricsWeigher',
        'reason': 'metric cpu.freq unavailable and [metrics] required is true: '
        'the host cannot be weighed',
    } in dry['rejected']
    assert dry['filters'][-1] == {'name': 'MetricsWeigher', 'in': 3, 'out': 2}
    with pytest.raises(exception.NoValidHost) as err:
        sched.schedule(testing.spec(vcpus=1), [host('bare', metrics={})])
    assert 'MetricsWeigher: 1 in, 0 out' in err.value.reason
    assert 'metric cpu.freq unavailable' in err.value.reason


def test_metrics_not_required_weighs_unavailable(conf):
    """[metrics] required = False: the host is kept with weight_of_unavailable."""
    from nimbus.scheduler import selection

    conf.set_override('weight_setting', ['cpu.freq=1.0'], 'metrics')
    conf.set_override('required', False, 'metrics')
    conf.set_override('weight_of_unavailable', -500.0, 'metrics')
    hs = [
        host('full', metrics={'cpu.freq': 1.0}),
        host('bare', vcpus=64, metrics={}),
    ]
    sched = selection.FilterScheduler(conf)
    dry = sched.dry_run(testing.spec(vcpus=1), hs)
    assert dry['rejected'] == []
    ranked = {
        r['host']: r['weighers']['MetricsWeigher'] for r in dry['ranked']
    }
    assert ranked['bare']['raw'] == -500.0 and ranked['full']['raw'] == 1.0
    assert [r['host'] for r in dry['ranked']] == ['full', 'bare']
    # the host still takes instances once the others are full
    res = sched.schedule(testing.spec(vcpus=1), [host('bare', metrics={})])
    assert res[0][0].service_host == 'bare'


def test_metrics_multiplier_zero_rejects_nothing(conf):
    from nimbus.scheduler import selection

    conf.set_override('weight_setting', ['cpu.freq=1.0'], 'metrics')
    conf.set_override('weight_multiplier', 0.0, 'metrics')
    res = selection.FilterScheduler(conf).schedule(
        testing.spec(vcpus=1), [host('bare', metrics={})]
    )
    assert res[0][0].service_host == 'bare'
