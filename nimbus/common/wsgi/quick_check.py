"""A quick yes to "is this document valid?" for the common schemas.

jsonschema walks a schema anew for every document (a validator per
sub-schema, a type check per keyword): about a tenth of a small write
request's time in placement. :func:`checker` compiles a schema once into
a plain Python function that answers True only when the document is
valid under :class:`nimbus.common.wsgi.validation.StrictValidator`'s
rules (``integer`` is an int and not a bool, ``number`` an int or float
and not a bool; ``pattern`` is ``re.search``; lengths are ``len``).
False means "not sure": the caller then asks jsonschema, which finds the
error and words it. So a document is never let through that jsonschema
would refuse, and every 400 keeps jsonschema's words.

Schemas using a keyword outside the handled set (or ``format`` when
formats are checked) get no checker: :func:`checker` returns None.
"""

import re

_ANNOTATIONS = frozenset(
    ('description', 'title', '$schema', '$comment', 'examples', 'default')
)
_TYPES = {
    'object': lambda v: isinstance(v, dict),
    'array': lambda v: isinstance(v, list),
    'string': lambda v: isinstance(v, str),
    'integer': lambda v: isinstance(v, int) and not isinstance(v, bool),
    'number': lambda v: (
        isinstance(v, (int, float)) and not isinstance(v, bool)
    ),
    'boolean': lambda v: isinstance(v, bool),
    'null': lambda v: v is None,
}


class _Unsupported(Exception):
    pass


def checker(schema, formats=False):
    """``check(document) -> bool`` for ``schema`` (True: valid for sure),
    or None when the schema uses what this module does not handle."""
    try:
        return _compile(schema, formats)
    except _Unsupported:
        return None


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _compile(schema, formats):
    if schema is True or schema == {}:
        return lambda v: True
    if schema is False:
        return lambda v: False
    if not isinstance(schema, dict):
        raise _Unsupported()
    checks = []
    if _OBJECT_KEYS.intersection(schema):
        checks.append(_object_check(schema, formats))
    for key, value in schema.items():
        if (
            key in _ANNOTATIONS
            or key in _OBJECT_KEYS
            or (key == 'format' and not formats)
        ):
            continue
        build = _KEYWORDS.get(key)
        if build is None:
            raise _Unsupported()
        checks.append(build(value, schema, formats))
    checks = [c for c in checks if c is not None]
    if len(checks) == 1:
        return checks[0]
    checks = tuple(checks)
    return lambda v: all(c(v) for c in checks)


def _type(value, schema, formats):
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or any(n not in _TYPES for n in names):
        raise _Unsupported()
    tests = tuple(_TYPES[n] for n in names)
    if len(tests) == 1:
        return tests[0]
    return lambda v: any(t(v) for t in tests)


def _object_check(schema, formats):
    """properties, patternProperties, additionalProperties and required,
    together (additionalProperties depends on the other two)."""
    props = schema.get('properties', {})
    patterns = schema.get('patternProperties', {})
    required = schema.get('required', [])
    if not (
        isinstance(props, dict)
        and isinstance(patterns, dict)
        and isinstance(required, list)
    ):
        raise _Unsupported()
    props = {name: _compile(sub, formats) for name, sub in props.items()}
    patterns = [
        (re.compile(p), _compile(sub, formats)) for p, sub in patterns.items()
    ]
    extra = schema.get('additionalProperties', True)
    extra_check = None if extra is True else _compile(extra, formats)
    required = tuple(required)

    def check(v):
        if not isinstance(v, dict):
            return True
        for name in required:
            if name not in v:
                return False
        for key, item in v.items():
            known = False
            sub = props.get(key)
            if sub is not None:
                known = True
                if not sub(item):
                    return False
            for pattern, sub in patterns:
                if pattern.search(key):
                    known = True
                    if not sub(item):
                        return False
            if not known and extra_check is not None and not extra_check(item):
                return False
        return True

    return check


_OBJECT_KEYS = frozenset(
    ('properties', 'patternProperties', 'additionalProperties', 'required')
)


def _typed(test, predicate):
    return lambda v: not test(v) or predicate(v)


def _pattern(value, schema, formats):
    regex = re.compile(value)
    return _typed(_TYPES['string'], lambda v: regex.search(v) is not None)


def _limit(test, compare):
    def keyword(value, schema, formats):
        if not _is_number(value):
            raise _Unsupported()
        return _typed(test, lambda v: compare(v, value))

    return keyword


def _enum(value, schema, formats):
    options = list(value)

    def check(v):
        # Sure only for an option of the very same type (jsonschema's
        # equality differs from Python's for 1 and True, 1 and 1.0).
        return any(type(o) is type(v) and o == v for o in options)

    return check


def _items(value, schema, formats):
    if not isinstance(value, (dict, bool)):
        raise _Unsupported()  # tuple validation
    sub = _compile(value, formats)
    return _typed(_TYPES['array'], lambda v: all(sub(i) for i in v))


def _unique(value, schema, formats):
    if not value:
        return None

    def check(v):
        # Sure only for strings (no 1 == True == 1.0 questions).
        return all(isinstance(i, str) for i in v) and len(set(v)) == len(v)

    return _typed(_TYPES['array'], check)


def _any_of(value, schema, formats):
    subs = tuple(_compile(s, formats) for s in value)
    return lambda v: any(s(v) for s in subs)


def _length(test, compare):
    def keyword(value, schema, formats):
        if not isinstance(value, int) or isinstance(value, bool):
            raise _Unsupported()
        return _typed(test, lambda v: compare(len(v), value))

    return keyword


_KEYWORDS = {
    'type': _type,
    'pattern': _pattern,
    'minimum': _limit(_is_number, lambda v, lim: v >= lim),
    'maximum': _limit(_is_number, lambda v, lim: v <= lim),
    'exclusiveMinimum': _limit(_is_number, lambda v, lim: v > lim),
    'exclusiveMaximum': _limit(_is_number, lambda v, lim: v < lim),
    'minLength': _length(_TYPES['string'], lambda n, lim: n >= lim),
    'maxLength': _length(_TYPES['string'], lambda n, lim: n <= lim),
    'minItems': _length(_TYPES['array'], lambda n, lim: n >= lim),
    'maxItems': _length(_TYPES['array'], lambda n, lim: n <= lim),
    'minProperties': _length(_TYPES['object'], lambda n, lim: n >= lim),
    'maxProperties': _length(_TYPES['object'], lambda n, lim: n <= lim),
    'enum': _enum,
    'items': _items,
    'uniqueItems': _unique,
    'anyOf': _any_of,
}
