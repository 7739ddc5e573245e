"""BuildRequest (contract 1.0): a server before it has a cell.

The compute API writes one per instance of a create into the API database
(``build_requests.instance``); the super conductor reads it back, in
another process, to create the instance in its cell. Server attributes
only the compute API reads back (``SERVER_ATTRIBUTES``) travel with it to
the cell. Keys a newer writer adds are kept in ``extra``.
"""

from __future__ import annotations

import dataclasses

from nimbus.common.objects import base

_STR = (
    'display_name',
    'user_id',
    'vm_state',
    'task_state',
    'image_ref',
    'availability_zone',
    'reservation_id',
    'description',
    'key_name',
    'hostname',
    'access_ip_v4',
    'access_ip_v6',
    'disk_config',
    'created_at',
    'updated_at',
)
_INT = ('power_state', 'launch_index')
_FIELDS = {
    'uuid',
    'project_id',
    'flavor',
    'metadata',
    'tags',
    'security_groups',
    *_STR,
    *_INT,
}


@dataclasses.dataclass(slots=True)
class BuildRequest:
    uuid: str
    project_id: str
    flavor: dict
    user_id: str | None = None
    display_name: str | None = None
    vm_state: str | None = None
    task_state: str | None = None
    power_state: int | None = None
    image_ref: str | None = None
    availability_zone: str | None = None
    metadata: dict = dataclasses.field(default_factory=dict)
    reservation_id: str | None = None
    launch_index: int | None = None
    description: str | None = None
    key_name: str | None = None
    hostname: str | None = None
    tags: list = dataclasses.field(default_factory=list)
    access_ip_v4: str | None = None
    access_ip_v6: str | None = None
    disk_config: str | None = None
    security_groups: list = dataclasses.field(default_factory=list)
    created_at: str | None = None
    updated_at: str | None = None
    extra: dict = dataclasses.field(default_factory=dict)

    VERSION = '1.0'

    @classmethod
    def from_primitive(cls, d: dict) -> 'BuildRequest':
        name = 'build_request'
        base.check(d, name, cls.VERSION)
        out = cls(
            uuid=base.expect(d.get('uuid'), str, name, 'uuid', False),
            project_id=base.expect(
                d.get('project_id'), str, name, 'project_id', False
            ),
            flavor=base.expect(d.get('flavor'), dict, name, 'flavor', False),
            metadata=base.expect(d.get('metadata'), dict, name, 'metadata')
            or {},
            tags=base.expect(d.get('tags'), list, name, 'tags') or [],
            security_groups=base.expect(
                d.get('security_groups'), list, name, 'security_groups'
            )
            or [],
            extra=base.extra(d, _FIELDS),
        )
        for key in _STR:
            setattr(out, key, base.expect(d.get(key), str, name, key))
        for key in _INT:
            setattr(out, key, base.expect(d.get(key), int, name, key))
        return out

    def to_primitive(self) -> dict:
        return base.primitive(self, self.VERSION)

    def instance_values(self) -> dict:
        """The cell instance's values this request gives (the cell's
        ``instances.create`` takes them, with the server attributes)."""
        out = self.to_primitive()
        del out[base.VERSION_KEY]
        return out
