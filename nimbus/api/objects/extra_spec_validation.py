"""Flavor extra spec validation as the API answers it: the validators of
:mod:`nimbus.extra_specs` (Nimbus's own and every plugin's), whose errors,
of whatever type a plugin raises, become :class:`InvalidExtraSpec` and so
a 400 naming the key."""

from nimbus import extra_specs


class InvalidExtraSpec(Exception):
    pass


def validate(key, value):
    """Raise :class:`InvalidExtraSpec` when ``key=value`` is not valid."""
    try:
        extra_specs.validate(key, value)
    except Exception as exc:  # a plugin validator's own error type too
        raise InvalidExtraSpec(str(exc) or exc.__class__.__name__)


def validate_groups(specs):
    """Checks that span keys (a numbered trait group needs resources), on the
    flavor's extra specs as they would be after a change. Raises
    :class:`InvalidExtraSpec`."""
    try:
        extra_specs.validate_groups(dict(specs))
    except Exception as exc:
        raise InvalidExtraSpec(str(exc) or exc.__class__.__name__)
