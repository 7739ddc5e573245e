"""The one JSON Schema validator of every REST API: integers are integers."""

from hypothesis import given
from hypothesis import strategies as st

from nimbus.common.wsgi import validation

INTEGER = {'type': 'object', 'properties': {'n': {'type': 'integer'}}}
NUMBER = {'type': 'object', 'properties': {'n': {'type': 'number'}}}
EITHER = {
    'type': 'object',
    'properties': {'n': {'type': ['integer', 'string']}},
}


@given(st.integers())
def test_every_int_is_an_integer(value):
    assert validation.first_error(INTEGER, {'n': value}) is None
    assert validation.first_error(NUMBER, {'n': value}) is None


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_no_float_is_an_integer(value):
    """1.0, 1e+20 (a JSON reader's 99999999999999999999) and every other
    float is refused where the schema says integer, alone or in a union;
    a number may still be a float."""
    error = validation.first_error(INTEGER, {'n': value})
    assert error is not None and "is not of type 'integer'" in error.message
    assert validation.first_error(EITHER, {'n': value}) is not None


@given(st.booleans())
def test_booleans_are_not_integers(value):
    assert validation.first_error(INTEGER, {'n': value}) is not None


def test_where_names_the_path():
    schema = {
        'type': 'object',
        'properties': {'a': {'type': 'array', 'items': INTEGER}},
    }
    error = validation.first_error(schema, {'a': [{'n': 1}, {'n': 1.5}]})
    assert validation.where(error) == " (at 'a/1/n')"
    assert validation.where(validation.first_error(INTEGER, [])) == ''


def test_validators_are_built_once_per_schema():
    assert validation.validator(INTEGER) is validation.validator(INTEGER)
    assert validation.validator(INTEGER) is not validation.validator(
        INTEGER, formats=False
    )


def test_formats_are_checked_only_when_asked():
    schema = {'type': 'string', 'format': 'ipv4'}
    assert validation.first_error(schema, 'not-an-ip') is not None
    assert validation.first_error(schema, 'not-an-ip', formats=False) is None
