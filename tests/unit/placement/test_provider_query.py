"""GET /resource_providers filters parsed with the engine's helpers."""

import pytest

from nimbus.common.wsgi import Version
from nimbus.placement import exception
from nimbus.placement.handlers import query

from tests.unit.placement.test_candidates_support import (
    AGG1,
    AGG2,
    TreeBuilder,
)


def _snap():
    b = TreeBuilder()
    b.add(1, inv={'VCPU': 8}, traits={'T1', 'T2'}, aggs={AGG1, AGG2})
    b.add(2, inv={'VCPU': 2}, traits={'T2'}, aggs={AGG2})
    b.add(3)
    return b.snapshot()


def _names(qs, version='1.39'):
    snap = _snap()
    filters = query.parse(qs, Version.parse(version), snap)
    return sorted(p.name for p in query.filter_providers(snap, **filters))


def test_member_of_forms():
    assert _names({'member_of': [AGG1]}) == ['rp1']
    assert _names({'member_of': ['in:%s,%s' % (AGG1, AGG2)]}) == ['rp1', 'rp2']
    assert _names({'member_of': [AGG1, AGG2]}) == ['rp1']
    assert _names({'member_of': ['!' + AGG1]}) == ['rp2', 'rp3']
    # Before 1.24 a repeated member_of is refused (as Placement).
    with pytest.raises(exception.BadRequest) as info:
        _names({'member_of': [AGG1, AGG2]}, '1.23')
    assert 'Multiple member_of' in info.value.message
    assert info.value.error_code == exception.UNDEFINED
    # Aggregate uuids compare in their canonical form.
    assert _names({'member_of': [AGG1.upper()]}) == ['rp1']


def test_required_forms():
    assert _names({'required': ['T2']}) == ['rp1', 'rp2']
    assert _names({'required': ['T2,!T1']}) == ['rp2']
    assert _names({'required': ['in:T1,T2', '!T1']}) == ['rp2']
    # Before 1.39 a repeated required counts with its last value.
    assert _names({'required': ['T1', 'T2']}, '1.38') == ['rp1', 'rp2']
    assert _names({'required': ['T2', 'T1']}, '1.38') == ['rp1']
    # Any number of '!' forbid (Placement's parser strips them all).
    assert _names({'required': ['T2,!!T1']}) == ['rp2']
    # Required and forbidden at once matches nothing (no 400 here).
    assert _names({'required': ['T1,!T1']}) == []


def test_resources():
    assert _names({'resources': ['VCPU:4']}) == ['rp1']
    assert _names({'resources': ['VCPU:1']}) == ['rp1', 'rp2']


@pytest.mark.parametrize(
    'qs,version',
    [
        ({'member_of': ['nope']}, '1.39'),
        ({'member_of': ['!' + AGG1]}, '1.31'),
        ({'required': ['!T1']}, '1.21'),
        ({'required': ['in:T1,T2']}, '1.38'),
        ({'required': ['T1,,T2']}, '1.39'),
        ({'required': ['CUSTOM_NOPE']}, '1.39'),
        ({'resources': ['VCPU']}, '1.39'),
        ({'resources': ['VCPU:0']}, '1.39'),
        ({'resources': ['CUSTOM_NOPE:1']}, '1.39'),
        ({'uuid': ['nope']}, '1.39'),
    ],
)
def test_bad_values(qs, version):
    # OpenStack Placement names no placement.query.* code on this route.
    with pytest.raises(exception.BadRequest) as info:
        _names(qs, version)
    assert info.value.error_code == exception.UNDEFINED
