"""Instance (contract 1.0): the instance a conductor hands a compute with
``build_and_run_instance``: the cell's record of it as the compute builds
it (its row in the cell database, written by the super or cell conductor
just before the cast).

``uuid`` is required; the other fields are the record's, None (or empty)
when the sender had none. A primitive without a version (the dict sent
before contracts covered it) loads as 1.0; keys a newer minor adds are
kept in ``extra`` and passed on.
"""

from __future__ import annotations

import dataclasses

from nimbus.common.objects import base

_STR = (
    'display_name',
    'project_id',
    'user_id',
    'host',
    'node',
    'compute_node_uuid',
    'vm_state',
    'task_state',
    'image_ref',
    'availability_zone',
    'launched_at',
    'created_at',
)
_FIELDS = {
    'uuid',
    'power_state',
    'flavor',
    'metadata',
    'accel_uuids',
    'deleted',
    *_STR,
}


@dataclasses.dataclass(slots=True)
class Instance:
    uuid: str
    display_name: str | None = None
    project_id: str | None = None
    user_id: str | None = None
    host: str | None = None
    node: str | None = None
    compute_node_uuid: str | None = None
    vm_state: str | None = None
    task_state: str | None = None
    power_state: int | None = None
    flavor: dict = dataclasses.field(default_factory=dict)
    image_ref: str | None = None
    availability_zone: str | None = None
    metadata: dict = dataclasses.field(default_factory=dict)
    accel_uuids: list = dataclasses.field(default_factory=list)
    launched_at: str | None = None
    created_at: str | None = None
    deleted: bool = False
    extra: dict = dataclasses.field(default_factory=dict)

    VERSION = '1.0'

    @classmethod
    def from_primitive(cls, d: dict) -> 'Instance':
        name = 'instance'
        base.check(d, name, cls.VERSION)
        out = cls(
            uuid=base.expect(d.get('uuid'), str, name, 'uuid', False),
            power_state=base.expect(
                d.get('power_state'), int, name, 'power_state'
            ),
            flavor=base.expect(d.get('flavor'), dict, name, 'flavor') or {},
            metadata=base.expect(d.get('metadata'), dict, name, 'metadata')
            or {},
            accel_uuids=base.expect(
                d.get('accel_uuids'), list, name, 'accel_uuids'
            )
            or [],
            deleted=bool(base.expect(d.get('deleted'), bool, name, 'deleted')),
            extra=base.extra(d, _FIELDS),
        )
        for key in _STR:
            setattr(out, key, base.expect(d.get(key), str, name, key))
        return out

    def to_primitive(self) -> dict:
        return base.primitive(self, self.VERSION)
