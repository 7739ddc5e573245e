"""A host state applies placement's provider summary; the same summary seen
again is skipped, unless the host's usage moved by another way since
(a claim in this scheduler, a compute node record, a restore), in which
case placement's view wins again."""

from nimbus.scheduler import testing

from .conftest import host


def summary(vcpu_used=0, ram_used=0, traits=None):
    body = {
        'resources': {
            'VCPU': {'capacity': 16, 'used': vcpu_used},
            'MEMORY_MB': {'capacity': 32768, 'used': ram_used},
            'DISK_GB': {'capacity': 500, 'used': 0},
        }
    }
    if traits is not None:
        body['traits'] = traits
    return body


def test_summary_sets_capacity_usage_and_traits():
    hs = host('h1', vcpus=4, memory_mb=1024)
    hs.update_from_provider_summary(summary(3, 512, ['HW_CPU_X86_AVX2']))
    assert hs.free_vcpus == 13
    assert hs.free_ram_mb == 32768 - 512
    assert hs.traits == frozenset({'HW_CPU_X86_AVX2'})


def test_a_claim_here_is_undone_by_the_same_summary_again():
    hs = host('h1')
    hs.update_from_provider_summary(summary(2, 1024))
    hs.consume_from_request(testing.spec(vcpus=4, memory_mb=2048))
    assert hs.free_vcpus == 10
    # Placement did not record that claim (it failed, say): its summary,
    # identical to the last one, must still be applied.
    hs.update_from_provider_summary(summary(2, 1024))
    assert hs.free_vcpus == 14
    assert hs.free_ram_mb == 32768 - 1024


def test_restore_and_compute_node_updates_forget_the_summary():
    hs = host('h1')
    hs.update_from_provider_summary(summary(1))
    snap = hs.snapshot()
    hs.consume_from_request(testing.spec(vcpus=2))
    hs.restore(snap)
    hs.update_from_compute_node({'vcpus': 8, 'vcpus_used': 7})
    assert hs.vcpus_used == 7
    hs.update_from_provider_summary(summary(1))
    assert hs.vcpus_used == 1
    assert hs.free_vcpus == 15


def test_changed_summary_or_traits_are_applied():
    hs = host('h1')
    hs.update_from_provider_summary(summary(1, traits=['A']))
    hs.update_from_provider_summary(summary(5, traits=['A']))
    assert hs.free_vcpus == 11
    hs.update_from_provider_summary(summary(5, traits=['A', 'B']))
    assert hs.traits == frozenset({'A', 'B'})
    # Without traits in the summary (below 1.17) the traits stay.
    hs.update_from_provider_summary(summary(6))
    assert hs.traits == frozenset({'A', 'B'})
    assert hs.free_vcpus == 10
