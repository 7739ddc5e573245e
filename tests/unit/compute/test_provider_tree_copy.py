"""``ProviderTree.copy``: a copy that shares nothing mutable."""

from nimbus.compute import provider_tree


def test_a_copy_is_equal_and_independent():
    tree = provider_tree.ProviderTree()
    root = tree.new_root('host', 'r', generation=3)
    child = tree.new_child('gpu', root, 'c', generation=1)
    tree.update_inventory(root, {'VCPU': {'total': 8, 'reserved': 0}})
    tree.update_inventory(child, {'VGPU': {'total': 4, 'odd': [1, 2]}})
    tree.update_traits(root, {'HW_CPU_X86_AVX'})
    tree.update_aggregates(child, {'agg'})
    copy = tree.copy()
    assert [vars(p) for p in copy.providers()] == [
        vars(p) for p in tree.providers()
    ]
    copy.data(root).inventory['VCPU']['total'] = 16
    copy.data(root).inventory['MEMORY_MB'] = {'total': 1}
    copy.data(child).inventory['VGPU']['odd'].append(3)
    copy.data(root).traits.add('CUSTOM_X')
    copy.data(child).aggregates.clear()
    copy.data(root).generation = 4
    copy.new_child('fpga', root, 'f')
    assert tree.data(root).inventory == {'VCPU': {'total': 8, 'reserved': 0}}
    assert tree.data(child).inventory == {'VGPU': {'total': 4, 'odd': [1, 2]}}
    assert tree.data(root).traits == {'HW_CPU_X86_AVX'}
    assert tree.data(child).aggregates == {'agg'}
    assert tree.data(root).generation == 3
    assert not tree.exists('f')
