"""Flavor extra spec validation as the API answers it: the validators of
:mod:`nimbus.extra_specs` (Nimbus's own and every plugin's), whose errors,
of whatever type a plugin raises, become :class:`InvalidExtraSpec` and so
a 400 naming the key."""

import re

from nimbus import extra_specs


class InvalidExtraSpec(Exception):
    pass


def _namespace_pattern(validator):
    """The regex of a validator's namespace (``resources{group}`` matches
    ``resources1``), or None for a key without one."""
    if validator.namespace is None:
        return None
    pattern = re.escape(validator.namespace)
    for param in validator.parameters:
        pattern = pattern.replace(
            re.escape('{%s}' % param['name']), '(?:%s)' % param['pattern']
        )
    return '^%s$' % pattern


def known_namespace(key):
    """False for a key in a namespace no validator knows (``foo:bar``).
    Nova stores such keys unchecked ("custom namespaces"), and so does the
    compute API; a key in a known namespace is validated."""
    if ':' not in key:
        return True
    namespace = key.split(':', 1)[0]
    for validator in extra_specs.registry():
        pattern = _namespace_pattern(validator)
        if pattern is not None and re.match(pattern, namespace):
            return True
    return False


def validate(key, value):
    """Raise :class:`InvalidExtraSpec` when ``key=value`` is not valid; a
    key in an unknown namespace is accepted as it is."""
    if not known_namespace(key):
        return
    try:
        extra_specs.validate(key, value)
    except Exception as exc:  # a plugin validator's own error type too
        raise InvalidExtraSpec(str(exc) or exc.__class__.__name__) from exc


def validate_groups(specs):
    """Checks that span keys (a numbered trait group needs resources), on the
    flavor's extra specs as they would be after a change. Raises
    :class:`InvalidExtraSpec`."""
    try:
        extra_specs.validate_groups(dict(specs))
    except Exception as exc:
        raise InvalidExtraSpec(str(exc) or exc.__class__.__name__) from exc
