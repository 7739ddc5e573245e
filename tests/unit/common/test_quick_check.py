"""The compiled quick check never lets through what jsonschema refuses.

:mod:`nimbus.common.wsgi.quick_check` answers True ("valid for sure") or
False ("ask jsonschema"). Here, for every placement schema, documents
made from the schema's own names and values and from arbitrary JSON are
checked both ways: a True must never meet a jsonschema error.
"""

from hypothesis import HealthCheck, given, settings, strategies as st
import pytest

from nimbus.common.wsgi import quick_check
from nimbus.common.wsgi import validation
from nimbus.placement.schemas import aggregate
from nimbus.placement.schemas import allocation
from nimbus.placement.schemas import inventory
from nimbus.placement.schemas import resource_class
from nimbus.placement.schemas import resource_provider
from nimbus.placement.schemas import trait


def _schemas():
    out = []
    for mod in (
        aggregate,
        allocation,
        inventory,
        resource_class,
        resource_provider,
        trait,
    ):
        for name, value in sorted(vars(mod).items()):
            if (
                not name.startswith('__')
                and isinstance(value, dict)
                and 'type' in value
            ):
                out.append(('%s.%s' % (mod.__name__, name), value))
    return out


SCHEMAS = _schemas()


def _names(schema, found):
    """Property names and enum/pattern-like values the schema mentions:
    documents built from them reach the schema's inner rules."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == 'properties' and isinstance(value, dict):
                found.update(value)
            if key == 'required' and isinstance(value, list):
                found.update(value)
            if key == 'enum':
                found.update(v for v in value if isinstance(v, str))
            _names(value, found)
    elif isinstance(schema, list):
        for value in schema:
            _names(value, found)
    return found


def _documents(schema):
    keys = sorted(_names(schema, set())) + [
        'VCPU',
        'CUSTOM_X',
        'custom_x',
        'CUSTOM_X\n',
        '0a2b8c3d-1e4f-4a5b-8c6d-7e8f9a0b1c2d',
    ]
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-3, max_value=3),
        st.sampled_from([0, 1, 2**31 - 1, 2**31, 1.0, 1.5, -1.0, 3.5e38]),
        st.sampled_from(keys),
        st.text(max_size=5),
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.dictionaries(st.sampled_from(keys), inner, max_size=5),
        ),
        max_leaves=20,
    )


@pytest.mark.parametrize('name,schema', SCHEMAS, ids=[n for n, _ in SCHEMAS])
def test_every_placement_schema_has_a_quick_check(name, schema):
    assert quick_check.checker(schema) is not None


@pytest.mark.parametrize('name,schema', SCHEMAS, ids=[n for n, _ in SCHEMAS])
@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_a_quick_yes_is_never_a_jsonschema_no(name, schema, data):
    check = quick_check.checker(schema)
    full = validation.StrictValidator(schema)
    doc = data.draw(_documents(schema))
    if check(doc):
        assert list(full.iter_errors(doc)) == [], doc


def test_valid_bodies_take_the_quick_path_and_refusals_keep_their_words():
    body = {
        'resource_provider_generation': 0,
        'inventories': {
            'VCPU': {'total': 32, 'allocation_ratio': 16.0},
            'MEMORY_MB': {'total': 131072},
        },
    }
    check = quick_check.checker(inventory.PUT_INVENTORIES)
    assert check(body)
    assert validation.first_error(inventory.PUT_INVENTORIES, body) is None
    for bad in (
        dict(body, resource_provider_generation=True),  # a bool
        dict(body, resource_provider_generation=1.0),  # a float
        dict(body, inventories={'vcpu': {'total': 1}}),  # pattern
        dict(body, inventories={'VCPU': {'total': 0}}),  # minimum
        dict(body, extra=1),  # additionalProperties
        {'inventories': {}},  # required
    ):
        assert not check(bad)
        error = validation.first_error(inventory.PUT_INVENTORIES, bad)
        assert error is not None


def test_a_trailing_newline_is_left_to_jsonschema():
    # Python's "$" matches before a final newline: whatever the quick
    # check answers, jsonschema (re.search too) decides the same way.
    schema = {'type': 'string', 'pattern': '^[A-Z]+$'}
    check = quick_check.checker(schema)
    for doc in ('ABC', 'ABC\n', 'abc'):
        if check(doc):
            assert validation.first_error(schema, doc) is None


def test_unhandled_keywords_get_no_quick_check():
    assert quick_check.checker({'type': 'object', 'oneOf': []}) is None
    assert quick_check.checker({'items': [{'type': 'string'}]}) is None
    assert quick_check.checker({'type': 'string', 'format': 'uuid'}, True) is (
        None
    )
    assert quick_check.checker({'type': 'string', 'format': 'uuid'}) is not (
        None
    )


def test_enum_and_unique_items_answer_yes_only_when_sure():
    check = quick_check.checker({'enum': [1, 'a']})
    assert check(1) and check('a')
    assert not check(True) and not check(1.0) and not check('b')
    unique = quick_check.checker({'type': 'array', 'uniqueItems': True})
    assert unique(['a', 'b'])
    assert not unique(['a', 'a'])
    assert not unique([1, True])  # not sure: jsonschema decides
