"""Query parsing: every rule, microversion boundary and error."""

import pytest

from nimbus.placement.candidates import (
    CandidatesQueryError,
    get_allocation_candidates,
    parse_member_of,
    parse_resources,
    parse_trait_expr,
)

from tests.unit.placement.test_candidates_support import (
    AGG1,
    AGG2,
    TreeBuilder,
    opts,
    u,
)


@pytest.fixture
def snap():
    b = TreeBuilder()
    b.add(1, inv={'VCPU': 8, 'MEMORY_MB': 1024}, traits={'T1'})
    b.add(2, parent=1, inv={'CUSTOM_PGPU': 2})
    return b.snapshot()


def call(snap, params, mv=(1, 39)):
    params = {k: v if isinstance(v, list) else [v] for k, v in params.items()}
    return get_allocation_candidates(snap, params, mv, opts())


def error(snap, params, mv=(1, 39)):
    with pytest.raises(CandidatesQueryError) as exc:
        call(snap, params, mv)
    return exc.value


# ------------------------------------------------------------ helpers ---


def test_parse_resources():
    assert parse_resources('VCPU:2,MEMORY_MB:1024') == {
        'VCPU': 2,
        'MEMORY_MB': 1024,
    }


def test_parse_resources_last_amount_of_a_class_counts():
    assert parse_resources('VCPU:1,VCPU:2') == {'VCPU': 2}


@pytest.mark.parametrize(
    'value',
    [
        '',
        ' ',
        'VCPU',
        'VCPU:1:2',
        'VCPU:x',
        'VCPU:0',
        'VCPU:-1',
        'VCPU:1,',
        ':1',
    ],
)
def test_parse_resources_bad(value):
    with pytest.raises(CandidatesQueryError) as exc:
        parse_resources(value)
    assert exc.value.code == 'placement.undefined_code'
    assert 'resources' in exc.value.detail


def test_parse_trait_expr_shapes():
    req, forb = parse_trait_expr(['A,!B', 'in:C,D'], (1, 39))
    assert req == [frozenset({'A'}), frozenset({'C', 'D'})]
    assert forb == frozenset({'B'})


def test_parse_trait_expr_boundaries():
    with pytest.raises(CandidatesQueryError) as exc:
        parse_trait_expr(['!A'], (1, 21))
    assert '1.22' in exc.value.detail
    assert parse_trait_expr(['!A'], (1, 22)) == ([], frozenset({'A'}))
    with pytest.raises(CandidatesQueryError) as exc:
        parse_trait_expr(['in:A,B'], (1, 38))
    assert '1.39' in exc.value.detail
    # Repeated before 1.39: the last value counts (as Placement).
    assert parse_trait_expr(['A', 'B'], (1, 38)) == (
        [frozenset({'B'})],
        frozenset(),
    )
    assert parse_trait_expr(['A', 'B'], (1, 39)) == (
        [frozenset({'A'}), frozenset({'B'})],
        frozenset(),
    )
    assert parse_trait_expr(['!!A'], (1, 22)) == ([], frozenset({'A'}))
    with pytest.raises(CandidatesQueryError):
        parse_trait_expr(['!!'], (1, 22))
    with pytest.raises(CandidatesQueryError):
        parse_trait_expr(['in:A,!B'], (1, 39))
    with pytest.raises(CandidatesQueryError):
        parse_trait_expr(['A,,B'], (1, 39))


def test_parse_member_of_shapes():
    req, forb = parse_member_of(
        ['in:%s,%s' % (AGG1, AGG2), AGG1, '!' + AGG2], (1, 32)
    )
    assert req == [frozenset({AGG1, AGG2}), frozenset({AGG1})]
    assert forb == frozenset({AGG2})
    req, forb = parse_member_of(['!in:%s,%s' % (AGG1, AGG2)], (1, 39))
    assert req == [] and forb == frozenset({AGG1, AGG2})


@pytest.mark.parametrize(
    'values,mv,needle',
    [
        ([AGG1, AGG2], (1, 23), '1.24'),
        (['!' + AGG1], (1, 31), '1.32'),
        (['%s,%s' % (AGG1, AGG2)], (1, 39), "'in:'"),
        (['in:%s,!%s' % (AGG1, AGG2)], (1, 39), '!in:'),
        (['not-a-uuid'], (1, 39), 'UUID'),
    ],
)
def test_parse_member_of_bad(values, mv, needle):
    with pytest.raises(CandidatesQueryError) as exc:
        parse_member_of(values, mv)
    assert needle in exc.value.detail
    assert 'member_of' in exc.value.detail
    assert exc.value.code == 'placement.undefined_code'


def test_parse_member_of_canonical_uuids():
    req, forb = parse_member_of(
        [AGG1.upper().replace('-', ''), '!' + AGG2.upper()], (1, 39)
    )
    assert req == [frozenset({AGG1})] and forb == frozenset({AGG2})


# ----------------------------------------------- microversion gates ---


@pytest.mark.parametrize(
    'key,value,first',
    [
        ('limit', '1', (1, 16)),
        ('required', 'T1', (1, 17)),
        ('member_of', AGG1, (1, 21)),
        ('resources1', 'VCPU:1', (1, 25)),
        ('group_policy', 'none', (1, 25)),
        ('in_tree', u(1), (1, 31)),
        ('resources_X', 'VCPU:1', (1, 33)),
        ('root_required', 'T1', (1, 35)),
    ],
)
def test_parameter_microversion_gates(snap, key, value, first):
    params = {key: value}
    if key != 'resources1' and key != 'resources_X':
        params['resources'] = 'VCPU:1'
    before = (first[0], first[1] - 1)
    err = error(snap, params, before)
    assert key in err.detail
    call(snap, params, first)


def test_same_subtree_gate(snap):
    params = {
        'resources_A': 'VCPU:1',
        'resources_B': 'CUSTOM_PGPU:1',
        'group_policy': 'none',
        'same_subtree': '_A,_B',
    }
    assert 'same_subtree' in error(snap, params, (1, 35)).detail
    assert call(snap, params, (1, 36))['allocation_requests']


def test_unknown_parameter(snap):
    err = error(snap, {'resources': 'VCPU:1', 'foo': 'bar'})
    assert 'foo' in err.detail
    assert err.code == 'placement.undefined_code'


def test_bad_suffixes(snap):
    # '0' is not a 1.25 numeric suffix, but a valid 1.33 string suffix.
    assert (
        'resources0' in error(snap, {'resources0': 'VCPU:1'}, (1, 32)).detail
    )
    call(snap, {'resources0': 'VCPU:1'}, (1, 33))
    assert error(snap, {'resources_' + 'x' * 65: 'VCPU:1'})
    assert error(snap, {'resources_a.b': 'VCPU:1'})


def test_device_profile_style_suffix(snap):
    """Nova/Cyborg use the requester id ``device_profile_<N>`` as suffix."""
    body = call(
        snap,
        {
            'resources': 'VCPU:1',
            'resourcesdevice_profile_0': 'CUSTOM_PGPU:1',
            'requireddevice_profile_0': '!T1',
        },
    )
    ar = body['allocation_requests'][0]
    assert ar['mappings'] == {'': [u(1)], 'device_profile_0': [u(2)]}


def test_resources_required_before_1_25(snap):
    err = error(snap, {'limit': '1'}, (1, 24))
    assert 'resources' in err.detail


# ------------------------------------------------------ group checks ---


def test_repeated_resources_key_counts_with_its_last_value(snap):
    body = call(snap, {'resources': ['VCPU:100', 'VCPU:2']})
    (ar,) = body['allocation_requests']
    assert ar['allocations'][u(1)]['resources'] == {'VCPU': 2}


def test_repeated_in_tree_counts_with_its_last_value(snap):
    body = call(snap, {'resources': 'VCPU:1', 'in_tree': [u(77), u(2)]})
    assert len(body['allocation_requests']) == 1
    body = call(snap, {'resources': 'VCPU:1', 'in_tree': [u(2), u(77)]})
    assert body['allocation_requests'] == []


def test_repeated_limit_and_group_policy_count_with_their_first(snap):
    b = TreeBuilder()
    for i in (1, 2, 3):
        b.add(i, inv={'VCPU': 4})
    many = b.snapshot()
    body = call(many, {'resources': 'VCPU:1', 'limit': ['2', '1']})
    assert len(body['allocation_requests']) == 2
    assert error(many, {'resources': 'VCPU:1', 'limit': ['2', 'x']})
    body = call(
        many,
        {
            'resources1': 'VCPU:1',
            'resources2': 'VCPU:1',
            'group_policy': ['isolate', 'none'],
        },
    )
    assert all(
        len(ar['allocations']) == 2 for ar in body['allocation_requests']
    )


def test_repeated_root_required_is_refused(snap):
    err = error(snap, {'resources': 'VCPU:1', 'root_required': ['T1', 'T1']})
    assert err.code == 'placement.query.duplicate_key'
    assert 'root_required' in err.detail


def test_repeated_member_of_refused_before_1_24(snap):
    err = error(
        snap, {'resources': 'VCPU:1', 'member_of': [AGG1, AGG2]}, (1, 23)
    )
    assert 'Multiple member_of' in err.detail
    assert err.code == 'placement.undefined_code'
    call(snap, {'resources': 'VCPU:1', 'member_of': [AGG1, AGG2]}, (1, 24))


def test_repeated_required_before_1_39_counts_with_its_last(snap):
    body = call(
        snap, {'resources': 'VCPU:1', 'required': ['NOPE', 'T1']}, (1, 38)
    )
    assert len(body['allocation_requests']) == 1


@pytest.mark.parametrize('value', ['0', '-1', 'x', '1.5', ''])
def test_bad_limit(snap, value):
    assert (
        'limit' in error(snap, {'resources': 'VCPU:1', 'limit': value}).detail
    )


def test_bad_group_policy(snap):
    err = error(snap, {'resources1': 'VCPU:1', 'group_policy': 'x'})
    assert 'group_policy' in err.detail


def test_group_policy_required(snap):
    err = error(snap, {'resources1': 'VCPU:1', 'resources2': 'VCPU:1'})
    assert err.code == 'placement.undefined_code'
    assert 'group_policy' in err.detail
    call(snap, {'resources1': 'VCPU:1'})  # one group: not required


def test_bad_in_tree(snap):
    assert (
        'in_tree'
        in error(snap, {'resources': 'VCPU:1', 'in_tree': 'nope'}).detail
    )


def test_unknown_in_tree_gives_no_candidates(snap):
    body = call(snap, {'resources': 'VCPU:1', 'in_tree': u(77)})
    assert body == {'allocation_requests': [], 'provider_summaries': {}}


def test_unknown_resource_class(snap):
    err = error(snap, {'resources': 'VCPU:1,CUSTOM_NOPE:1'})
    assert 'Invalid resource class' in err.detail
    assert 'CUSTOM_NOPE' in err.detail


def test_unknown_traits(snap):
    err = error(snap, {'resources': 'VCPU:1', 'required': 'NOPE,!NOPE2'})
    assert err.detail.startswith('No such trait(s): NOPE, NOPE2')
    err = error(snap, {'resources': 'VCPU:1', 'root_required': 'ZZZ'})
    assert 'ZZZ' in err.detail


def test_orphans_before_1_36(snap):
    err = error(snap, {'resources': 'VCPU:1', 'required1': 'T1'}, (1, 35))
    assert 'required1' in err.detail
    err = error(snap, {'resources': 'VCPU:1', 'member_of1': AGG1}, (1, 35))
    assert 'member_of1' in err.detail
    err = error(snap, {'resources': 'VCPU:1', 'in_tree1': u(1)}, (1, 35))
    assert 'in_tree1' in err.detail


def test_resourceless_rules_from_1_36(snap):
    err = error(snap, {'resources': 'VCPU:1', 'required_X': 'T1'})
    assert err.code == 'placement.query.bad_value'
    assert '_X' in err.detail and 'same_subtree' in err.detail
    err = error(snap, {'required_X': 'T1', 'same_subtree': '_X'})
    assert err.code == 'placement.query.missing_value'
    err = error(
        snap,
        {
            'resources': 'VCPU:1',
            'resources_A': 'VCPU:1',
            'same_subtree': '_A,_Z',
        },
    )
    assert '_Z' in err.detail
    err = error(snap, {'required': 'T1', 'resources_A': 'VCPU:1'})
    assert 'unsuffixed' in err.detail
    err = error(snap, {'resources_A': 'VCPU:1', 'same_subtree': '_A,'})
    assert 'same_subtree' in err.detail


def test_conflicting_traits(snap):
    err = error(snap, {'resources': 'VCPU:1', 'required': 'T1,!T1'})
    assert 'Conflicting' in err.detail and 'required' in err.detail
    err = error(
        snap, {'resources': 'VCPU:1', 'required': ['in:T1,T2', '!T1,!T2']}
    )
    assert 'Conflicting' in err.detail
    err = error(snap, {'resources': 'VCPU:1', 'root_required': 'T1,!T1'})
    assert 'root_required' in err.detail


def test_root_required_rejects_in(snap):
    err = error(snap, {'resources': 'VCPU:1', 'root_required': 'in:T1,T2'})
    assert 'root_required' in err.detail


def test_microversion_range(snap):
    error(snap, {'resources': 'VCPU:1'}, (1, 9))
    error(snap, {'resources': 'VCPU:1'}, (1, 40))
