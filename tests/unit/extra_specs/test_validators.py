import pytest

from nimbus import extra_specs


@pytest.mark.parametrize(
    'key,value',
    [
        ('hw:numa_nodes', '2'),
        ('hw:cpu_policy', 'dedicated'),
        ('hw:numa_cpus.0', '0-3,^2'),
        ('hw:numa_mem.1', '1024'),
        ('resources:VCPU', '0'),
        ('resources1:CUSTOM_PGPU', '1'),
        ('resources_device_profile_0:FPGA', '1'),
        ('trait:HW_CPU_X86_AVX2', 'required'),
        ('trait2:CUSTOM_X', 'forbidden'),
        ('group_policy', 'isolate'),
        ('pci_passthrough:alias', 'nic:2,gpu'),
        ('capabilities:cpu_info:features', '<all-in> aes'),
        ('aggregate_instance_extra_specs:ssd', 'true'),
        ('ssd', 'true'),
        ('free_ram_mb', '>= 1024'),
        ('quota:cpu_shares', '1024'),
    ],
)
def test_valid(key, value):
    extra_specs.validate(key, value)


@pytest.mark.parametrize(
    'key,value',
    [
        ('hw:numa_nodes', 'two'),
        ('hw:numa_nodes', '0'),
        ('hw:cpu_policy', 'pinned'),
        ('hw:numa_cpus.0', '3-1'),
        ('hw:unknown', '1'),
        ('resources:VCPU', '-1'),
        ('resources:NOT_A_CLASS', '1'),
        ('trait:NOT_A_TRAIT', 'required'),
        ('trait:HW_CPU_X86_AVX2', 'maybe'),
        ('group_policy', 'all'),
        ('pci_passthrough:alias', 'nic:x'),
        ('capabilities:vcpus_total', '>= many'),
        ('acme:foo', 'bar'),
        ('ssd', '<or> a b'),
    ],
)
def test_invalid(key, value):
    with pytest.raises(extra_specs.ExtraSpecValidationError):
        extra_specs.validate(key, value)


def test_registry_and_validate_all():
    assert any(v.name == 'hw:numa_nodes' for v in extra_specs.registry())
    extra_specs.validate_all({'hw:numa_nodes': '1', 'group_policy': 'none'})
