"""InstanceUpdate (contract 1.0): the changes a compute asks its cell
conductor to compare-and-swap onto an instance (``instance_update``).

Only the fields set are changes: the others stay :data:`UNSET` and are not
on the wire, so the primitive is exactly the ``updates`` dict of
``instance_update`` (plus the version). ``fault`` adds an instance fault
(``{"message", "details", "code"}``) with the change. A field no version
1.x knows is refused (the cell conductor would not know how to write it).
"""

from __future__ import annotations

import dataclasses

from nimbus.common.objects import base


class _Unset:
    __slots__ = ()

    def __repr__(self):
        return 'UNSET'

    def __bool__(self):
        return False


UNSET = _Unset()

# field: the JSON types it takes (None is always allowed but for vm_state).
_TYPES = {
    'vm_state': str,
    'task_state': str,
    'power_state': int,
    'host': str,
    'node': str,
    'compute_node_uuid': str,
    'launched_at': str,
    'terminated_at': str,
    'deleted': bool,
    'display_name': str,
    'accel_uuids': list,
    'availability_zone': str,
    'build_alternates': dict,
    'fault': dict,
}


@dataclasses.dataclass(slots=True)
class InstanceUpdate:
    vm_state: str | _Unset = UNSET
    task_state: str | None | _Unset = UNSET
    power_state: int | None | _Unset = UNSET
    host: str | None | _Unset = UNSET
    node: str | None | _Unset = UNSET
    compute_node_uuid: str | None | _Unset = UNSET
    launched_at: str | None | _Unset = UNSET
    terminated_at: str | None | _Unset = UNSET
    deleted: bool | _Unset = UNSET
    display_name: str | None | _Unset = UNSET
    accel_uuids: list | _Unset = UNSET
    availability_zone: str | None | _Unset = UNSET
    build_alternates: dict | None | _Unset = UNSET
    fault: dict | None | _Unset = UNSET

    VERSION = '1.0'

    def changes(self) -> dict:
        """``{field: value}`` of the fields set."""
        return {
            name: getattr(self, name)
            for name in _TYPES
            if getattr(self, name) is not UNSET
        }

    @classmethod
    def from_primitive(cls, d: dict) -> 'InstanceUpdate':
        name = 'updates'
        base.check(d, name, cls.VERSION)
        values = {k: v for k, v in d.items() if k != base.VERSION_KEY}
        unknown = sorted(set(values) - set(_TYPES))
        if unknown:
            raise base.MalformedPrimitive(
                '%s: cannot update %s' % (name, ', '.join(unknown))
            )
        for key, value in values.items():
            base.expect(
                value,
                _TYPES[key],
                name,
                key,
                optional=key not in ('vm_state', 'deleted', 'accel_uuids'),
            )
        return cls(**values)

    def to_primitive(self) -> dict:
        out = {base.VERSION_KEY: self.VERSION}
        out.update(self.changes())
        return out
