"""The batch filters remember a host's verdict on requirements that read only
its static facts (CPU flags, hypervisor, stats, supported instances) and
forget it when the host's compute node record changes. Requirements on
usage (``free_ram_mb``, ``num_instances``) are judged every time."""

from nimbus.scheduler import testing
from nimbus.scheduler.filters.capabilities import (
    ComputeCapabilitiesFilter,
    ImagePropertiesFilter,
)

from .conftest import host


def _caps(**extra_specs):
    return testing.spec(extra_specs=extra_specs)


def test_verdict_is_remembered_and_forgotten_on_a_node_update():
    f = ComputeCapabilitiesFilter()
    h = host('h1', cpu_info={'arch': 'x86_64', 'features': ['aes']})
    spec = _caps(**{'capabilities:cpu_info:features': '<all-in> aes avx'})
    assert f.filter_all([h], spec) == []
    assert h.static_memo  # the verdict is kept on the host
    # The compute reports a new CPU: the verdict is judged again.
    h.update_from_compute_node(
        {'cpu_info': {'arch': 'x86_64', 'features': ['aes', 'avx']}}
    )
    assert not h.static_memo
    assert f.filter_all([h], spec) == [h]


def test_a_remembered_verdict_is_the_one_host_passes_gives():
    f = ComputeCapabilitiesFilter()
    hosts = [
        host('h%d' % i, hypervisor_version=v)
        for i, v in enumerate((6000000, 7000000, 8000000))
    ]
    spec = _caps(**{'capabilities:hypervisor_version': '>= 7000000'})
    for _ in range(2):  # second round from the memo
        assert (
            f.filter_all(hosts, spec)
            == [h for h in hosts if f.host_passes(h, spec)]
            == hosts[1:]
        )


def test_usage_requirements_are_judged_every_time():
    f = ComputeCapabilitiesFilter()
    h = host('h1')
    spec = _caps(
        **{
            'capabilities:hypervisor_type': 's== QEMU',
            'free_ram_mb': '>= 1000',
        }
    )
    assert f.filter_all([h], spec) == [h]
    # Usage changes without a node update (an instance landed): the static
    # part comes from the memo, free_ram_mb is read again.
    h.memory_mb_used = h.memory_mb
    h._recompute()
    assert f.filter_all([h], spec) == []


def test_different_flavors_get_their_own_verdicts():
    f = ComputeCapabilitiesFilter()
    h = host('h1', cpu_info={'arch': 'x86_64', 'features': ['aes']})
    aes = _caps(**{'capabilities:cpu_info:features': '<all-in> aes'})
    avx = _caps(**{'capabilities:cpu_info:features': '<all-in> avx'})
    assert f.filter_all([h], aes) == [h]
    assert f.filter_all([h], avx) == []
    assert f.filter_all([h], aes) == [h]


def test_image_properties_verdict_follows_supported_instances():
    f = ImagePropertiesFilter()
    h = host('h1', supported_instances=[['x86_64', 'qemu', 'hvm']])
    spec = testing.spec(image_props={'hw_architecture': 'aarch64'})
    assert f.filter_all([h], spec) == []
    h.update_from_compute_node(
        {'supported_instances': [['aarch64', 'qemu', 'hvm']]}
    )
    assert f.filter_all([h], spec) == [h]
