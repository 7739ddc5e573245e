"""Pure logic of the compute API: hints, extra spec shim, views, policies."""

import datetime
from unittest import mock

import pytest

from nimbus.api import policies
from nimbus.api.handlers import server_create_body
from nimbus.api.handlers import server_views
from nimbus.api.objects import extra_spec_validation
from nimbus.common.wsgi import errors


def test_normalise_hints():
    out = server_create_body.normalise_hints(
        {
            'same_host': 'a',
            'different_host': ['b'],
            'query': {'x': 1},
            'build_near_host_ip': '10.0.0.1',
            'cidr_mask': '24',
        }
    )
    assert out == {
        'same_host': ['a'],
        'different_host': ['b'],
        'query': '{"x": 1}',
        'build_near_host_ip': '10.0.0.1',
        'cidr': '/24',
    }
    assert server_create_body.normalise_hints(None) == {}
    with pytest.raises(errors.HTTPError):
        server_create_body.normalise_hints({'query': '{bad'})
    with pytest.raises(errors.HTTPError):
        server_create_body.normalise_hints({'cidr': '/24'})


@pytest.mark.parametrize(
    'ref, expected',
    [
        ('1', '1'),
        ('http://h/v2.1/flavors/abc', 'abc'),
        ('http://h/flavors/abc/', 'abc'),
        (7, '7'),
    ],
)
def test_ref_id(ref, expected):
    assert server_create_body._ref_id(ref) == expected


def test_extra_spec_errors_of_any_type_become_invalid_extra_spec():
    def validator(key, value):
        raise ValueError('nope: %s' % key)

    with mock.patch.object(
        extra_spec_validation.extra_specs, 'validate', side_effect=validator
    ):
        with pytest.raises(
            extra_spec_validation.InvalidExtraSpec, match='nope: k'
        ):
            extra_spec_validation.validate('k', 'v')


@pytest.mark.parametrize(
    'key, value, ok',
    [
        ('resources:VCPU', '2', True),
        ('resources1:CUSTOM_X', '1', True),
        ('resources:VCPU', 'x', False),
        ('resources:NOPE', '1', False),
        ('trait:HW_CPU_X86_AVX2', 'required', True),
        ('trait:CUSTOM_FOO', 'forbidden', True),
        ('trait:HW_CPU_X86_AVX2', 'yes', False),
        ('hw:cpu_policy', 'dedicated', True),
        ('hw:cpu_policy', 'x', False),
        ('hw:numa_nodes', '2', True),
        ('hw:numa_nodes', 'two', False),
        ('hw:made_up', '1', False),
        ('group_policy', 'isolate', True),
        ('group_policy', 'x', False),
        ('capabilities:cpu_info', '1', True),
    ],
)
def test_validation(key, value, ok):
    if ok:
        extra_spec_validation.validate(key, value)
    else:
        with pytest.raises(extra_spec_validation.InvalidExtraSpec):
            extra_spec_validation.validate(key, value)


def test_fault_shown_only_for_error_or_deleted():
    fault = {
        'code': 500,
        'message': 'm',
        'details': 'd',
        'created': datetime.datetime(2024, 1, 2, 3, 4, 5),
    }
    assert (
        server_views.fault({'vm_state': 'active', 'fault': fault}, True)
        is None
    )
    assert server_views.fault({'vm_state': 'error', 'fault': fault}, True) == {
        'code': 500,
        'message': 'm',
        'details': 'd',
        'created': '2024-01-02T03:04:05Z',
    }
    assert (
        server_views.fault({'vm_state': 'error', 'fault': None}, True) is None
    )


def test_a_500_faults_details_are_for_admins_only():
    fault = {
        'code': 500,
        'message': 'm',
        'details': 'hosts tried',
        'created': datetime.datetime(2024, 1, 2, 3, 4, 5),
    }
    owner = server_views.fault({'vm_state': 'error', 'fault': fault}, False)
    assert owner == {
        'code': 500,
        'message': 'm',
        'created': '2024-01-02T03:04:05Z',
    }
    other = dict(fault, code=400)
    assert (
        server_views.fault({'vm_state': 'error', 'fault': other}, False)[
            'details'
        ]
        == 'hosts tried'
    )


def test_policy_names_unique_and_documented():
    names = [r.name for r in policies.list_rules()]
    assert len(names) == len(set(names))
    for rule in policies.list_rules():
        assert rule.check_str
