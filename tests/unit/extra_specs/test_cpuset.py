"""CPU set syntax shared by the API's validation and the NUMA fitting."""

from hypothesis import given
from hypothesis import strategies as st
import pytest

from nimbus.extra_specs import cpuset


def test_ranges_exclusions_and_singles():
    assert cpuset.parse_cpu_spec('0-3,^2,6') == {0, 1, 3, 6}
    assert cpuset.parse_cpu_spec(' 4 , 1-1 ,') == {1, 4}
    assert cpuset.parse_cpu_spec('') == set()


@pytest.mark.parametrize('spec', ['3-1', 'x', '1-y', '^', '0-3,^two'])
def test_bad_specs_are_value_errors(spec):
    with pytest.raises(cpuset.InvalidCPUSpec):
        cpuset.parse_cpu_spec(spec)
    assert issubclass(cpuset.InvalidCPUSpec, ValueError)


@given(st.sets(st.integers(0, 255), max_size=40))
def test_a_listed_set_reads_back(cpus):
    spec = ','.join(str(c) for c in sorted(cpus))
    assert cpuset.parse_cpu_spec(spec) == cpus
