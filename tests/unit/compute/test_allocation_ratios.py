"""Allocation ratios follow Nova's rule: a configured ratio is forced, an
unset one keeps what placement has, initial_* only seeds a new inventory."""

import pytest

from nimbus.common import config
from nimbus.compute import provider_tree as ptree
from nimbus.compute.virt import driver
from nimbus.compute.virt import fake


def _conf(tmp_path, **compute):
    return config.build_conf(
        [],
        overrides={
            'DEFAULT': {'state_path': str(tmp_path)},
            'compute': compute,
        },
    )


def _ratios(tmp_path, current=None, **compute):
    tree = ptree.ProviderTree()
    root = tree.new_root('h1', 'rp-h1')
    if current:
        tree.update_inventory(root, current)
    fake.FakeDriver(_conf(tmp_path, **compute), 'h1').update_provider_tree(
        tree, 'h1'
    )
    return {
        rc: inv['allocation_ratio']
        for rc, inv in tree.data(root).inventory.items()
    }


def test_a_new_inventory_gets_the_initial_ratios(tmp_path):
    assert _ratios(tmp_path) == {'VCPU': 4.0, 'MEMORY_MB': 1.0, 'DISK_GB': 1.0}
    assert _ratios(
        tmp_path,
        initial_cpu_allocation_ratio=2.0,
        initial_disk_allocation_ratio=1.5,
    ) == {'VCPU': 2.0, 'MEMORY_MB': 1.0, 'DISK_GB': 1.5}


def test_unset_ratios_keep_what_placement_has(tmp_path):
    current = {
        'VCPU': {'total': 32, 'allocation_ratio': 2.5},
        'MEMORY_MB': {'total': 131072, 'allocation_ratio': 1.25},
    }
    assert _ratios(tmp_path, current) == {
        'VCPU': 2.5,
        'MEMORY_MB': 1.25,
        'DISK_GB': 1.0,
    }  # no DISK_GB inventory yet: the initial ratio


@pytest.mark.parametrize('configured, expected', [(8.0, 8.0), (0.0, 2.5)])
def test_a_configured_ratio_is_forced_and_zero_means_unset(
    tmp_path, configured, expected
):
    current = {'VCPU': {'total': 32, 'allocation_ratio': 2.5}}
    assert (
        _ratios(tmp_path, current, cpu_allocation_ratio=configured)['VCPU']
        == expected
    )


def test_allocation_ratio_rule(tmp_path):
    conf = _conf(tmp_path, ram_allocation_ratio=1.5)
    inventory = {
        'MEMORY_MB': {'allocation_ratio': 3.0},
        'VCPU': {'allocation_ratio': 16.0},
    }
    assert driver.allocation_ratio(conf, 'MEMORY_MB', inventory) == 1.5
    assert driver.allocation_ratio(conf, 'VCPU', inventory) == 16.0
    assert driver.allocation_ratio(conf, 'VCPU', None) == 4.0
    assert driver.allocation_ratio(conf, 'DISK_GB', inventory) == 1.0
