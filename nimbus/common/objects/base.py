"""What every contract shares: the version its primitive carries.

A contract is a typed object for one message body that crosses a process
(an RPC argument or a row another service reads). On the wire it is its
primitive: a dict of JSON values with the contract's version under
:data:`VERSION_KEY`. ``from_primitive`` accepts the same major version (a
newer minor only adds fields, which an older reader keeps in ``extra`` and
passes on) and a primitive without a version (written before contracts
were versioned: read as 1.0). Anything else, and a primitive whose fields
have the wrong JSON types, raises :class:`MalformedPrimitive` (a
ValueError), which RPC endpoints turn into
:class:`nimbus.common.rpc.InvalidMessage`.

The contracts look alike (a dataclass's field list, ``VERSION``,
``from_primitive`` checking each field's type), and that is by design:
each spells out the fields of its own message, which is what a reader of
the wire needs to see; what they share in logic lives here.
"""

from __future__ import annotations

import dataclasses

VERSION_KEY = 'nimbus_object.version'

# Read as this version when a primitive carries none.
UNVERSIONED = '1.0'


class MalformedPrimitive(ValueError):
    """A primitive that does not make the contract it claims to be."""


def _major(version, name):
    if not isinstance(version, str):
        raise MalformedPrimitive(
            '%s: version must be a string like "1.0", not %r' % (name, version)
        )
    head, dot, tail = version.partition('.')
    if not (head.isdigit() and dot and tail.isdigit()):
        raise MalformedPrimitive(
            '%s: version must look like "1.0", not %r' % (name, version)
        )
    return int(head)


def check(primitive, name, version):
    """The primitive's version (``UNVERSIONED`` when it has none), after
    checking it is a dict of a major version this reader knows."""
    if not isinstance(primitive, dict):
        raise MalformedPrimitive(
            '%s must be a JSON object, not %s'
            % (name, type(primitive).__name__)
        )
    found = primitive.get(VERSION_KEY, UNVERSIONED)
    if _major(found, name) != _major(version, name):
        raise MalformedPrimitive(
            '%s version %s is not compatible with %s (this reader)'
            % (name, found, version)
        )
    return found


def expect(value, kinds, name, field, optional=True):
    """``value`` when it is one of ``kinds`` (None too when ``optional``);
    bool is not taken for int."""
    if value is None and optional:
        return value
    if (
        not isinstance(value, kinds)
        or isinstance(value, bool)
        and bool not in (kinds if isinstance(kinds, tuple) else (kinds,))
    ):
        if isinstance(kinds, tuple):
            wanted = ' or '.join(k.__name__ for k in kinds)
        else:
            wanted = kinds.__name__
        raise MalformedPrimitive(
            '%s: %s must be %s, not %s'
            % (name, field, wanted, type(value).__name__)
        )
    return value


def extra(primitive, known):
    """What ``primitive`` carries beyond the ``known`` field names and the
    version: the fields a newer writer added, which this reader keeps in
    ``extra`` and passes on."""
    return {
        k: v
        for k, v in primitive.items()
        if k not in known and k != VERSION_KEY
    }


def primitive(contract, version):
    """The primitive of a dataclass ``contract``: its fields by name under
    ``version``; a field named ``extra`` (what a newer writer sent that
    this reader does not know) is merged in rather than nested."""
    out = {VERSION_KEY: version}
    extra = None
    for field in dataclasses.fields(contract):
        if field.name == 'extra':
            extra = contract.extra
        else:
            out[field.name] = getattr(contract, field.name)
    if extra:
        out.update(extra)
    return out
