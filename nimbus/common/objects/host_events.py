"""The scheduler's host-cache events (contracts 1.0): what API-level
services cast to every scheduler between its reloads (fanout).

- :class:`InstanceInfo`: an instance placed on a host
  (``update_instance_info``; the super conductor sends it after each
  placement). ``image_properties`` None makes the scheduler look
  ``image_ref`` up.
- :class:`AggregateInfo`: an aggregate created or changed
  (``update_aggregates``, a list) or deleted (``delete_aggregate``).
- :class:`ServiceInfo`: a compute service enabled, disabled or forced down
  (``update_service``).
- :class:`ServerGroupInfo`: a server group created or grown
  (``update_server_group``).

Each endpoint converts its event once on arrival; :meth:`to_cache` is the
record the scheduler's host manager keeps (the shape its full reload
reads from the databases). Keys a newer minor adds are kept in ``extra``.
"""

from __future__ import annotations

import dataclasses

from nimbus.common.objects import base


class _Event:
    """``SPEC``: ``{field: (JSON types, required)}``, in wire order."""

    __slots__ = ()
    NAME = 'event'
    VERSION = '1.0'
    SPEC: dict = {}

    @classmethod
    def from_primitive(cls, d: dict):
        base.check(d, cls.NAME, cls.VERSION)
        values = {
            key: base.expect(d.get(key), kinds, cls.NAME, key, not required)
            for key, (kinds, required) in cls.SPEC.items()
        }
        for f in dataclasses.fields(cls):
            # A null container or flag is its default ([], {}, False).
            if f.name in values and values[f.name] is None:
                if f.default_factory is not dataclasses.MISSING:
                    values[f.name] = f.default_factory()
                elif f.default is not dataclasses.MISSING:
                    values[f.name] = f.default
        values['extra'] = base.extra(d, cls.SPEC)
        return cls(**values)

    def to_cache(self) -> dict:
        return {key: getattr(self, key) for key in self.SPEC}

    def to_primitive(self) -> dict:
        out = {base.VERSION_KEY: self.VERSION}
        out.update(self.extra)
        out.update(self.to_cache())
        return out


@dataclasses.dataclass(slots=True)
class InstanceInfo(_Event):
    uuid: str
    flavor_id: str | None = None
    group_uuid: str | None = None
    image_ref: str | None = None
    image_properties: dict | None = None
    extra: dict = dataclasses.field(default_factory=dict)

    NAME = 'instance_info'
    SPEC = {
        'uuid': (str, True),
        'flavor_id': (str, False),
        'group_uuid': (str, False),
        'image_ref': (str, False),
        'image_properties': (dict, False),
    }


@dataclasses.dataclass(slots=True)
class AggregateInfo(_Event):
    id: int | None = None
    uuid: str | None = None
    name: str | None = None
    hosts: list = dataclasses.field(default_factory=list)
    metadata: dict = dataclasses.field(default_factory=dict)
    extra: dict = dataclasses.field(default_factory=dict)

    NAME = 'aggregate'
    SPEC = {
        'id': (int, False),
        'uuid': (str, False),
        'name': (str, False),
        'hosts': (list, False),
        'metadata': (dict, False),
    }


@dataclasses.dataclass(slots=True)
class ServiceInfo(_Event):
    host: str
    binary: str | None = None
    disabled: bool = False
    disabled_reason: str | None = None
    forced_down: bool = False
    # None: up unless forced down.
    up: bool | None = None
    extra: dict = dataclasses.field(default_factory=dict)

    NAME = 'service'
    SPEC = {
        'host': (str, True),
        'binary': (str, False),
        'disabled': (bool, False),
        'disabled_reason': (str, False),
        'forced_down': (bool, False),
        'up': (bool, False),
    }


@dataclasses.dataclass(slots=True)
class ServerGroupInfo(_Event):
    uuid: str
    name: str | None = None
    policy: str | None = None
    rules: dict = dataclasses.field(default_factory=dict)
    members: list = dataclasses.field(default_factory=list)
    extra: dict = dataclasses.field(default_factory=dict)

    NAME = 'group'
    SPEC = {
        'uuid': (str, True),
        'name': (str, False),
        'policy': (str, False),
        'rules': (dict, False),
        'members': (list, False),
    }
