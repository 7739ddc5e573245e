"""RequestSpec: what the scheduler is asked to place.

The wire form is the plain dict documented in ``docs/contracts.md``; ``RequestSpec.from_dict``
and ``RequestSpec.to_dict`` round-trip it (unknown keys are kept in ``extra`` so a newer sender
does not lose data through an older hop).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any


@dataclasses.dataclass
class Flavor:
    name: str = ''
    flavorid: str = ''
    vcpus: int = 0
    memory_mb: int = 0
    root_gb: int = 0
    ephemeral_gb: int = 0
    swap: int = 0
    extra_specs: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict | None) -> 'Flavor':
        d = d or {}
        return cls(
            name=d.get('name', ''),
            flavorid=str(d.get('flavorid', '')),
            vcpus=int(d.get('vcpus', 0)),
            memory_mb=int(d.get('memory_mb', 0)),
            root_gb=int(d.get('root_gb', 0)),
            ephemeral_gb=int(d.get('ephemeral_gb', 0)),
            swap=int(d.get('swap', 0) or 0),
            extra_specs=dict(d.get('extra_specs') or {}),
        )

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class ImageMeta:
    id: str | None = None
    name: str | None = None
    properties: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict | None) -> 'ImageMeta | None':
        if d is None:
            return None
        return cls(
            id=d.get('id'),
            name=d.get('name'),
            properties=dict(d.get('properties') or {}),
        )

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class InstanceGroup:
    uuid: str | None = None
    name: str | None = None
    policy: str | None = None
    rules: dict = dataclasses.field(default_factory=dict)
    members: list = dataclasses.field(default_factory=list)
    hosts: list = dataclasses.field(default_factory=list)

    @classmethod
    def from_dict(cls, d: dict | None) -> 'InstanceGroup | None':
        if d is None:
            return None
        return cls(
            uuid=d.get('uuid'),
            name=d.get('name'),
            policy=d.get('policy'),
            rules=dict(d.get('rules') or {}),
            members=list(d.get('members') or []),
            hosts=list(d.get('hosts') or []),
        )

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


_SIMPLE = (
    'project_id',
    'user_id',
    'availability_zone',
    'device_profile',
    'request_id',
)
_LISTS = ('instance_uuids', 'ignore_hosts', 'force_hosts', 'force_nodes')


# The wire form's nested values and the JSON types they must have when
# present (None is always allowed). A spec off the bus that breaks these is
# refused as a whole rather than failing half-way through a decision.
_SHAPES = {
    'flavor': dict,
    'image': dict,
    'scheduler_hints': dict,
    'instance_group': dict,
    'requested_resources': list,
    'retry': dict,
    **{k: list for k in _LISTS},
    **{k: str for k in _SIMPLE},
}


def _check_shapes(d: dict) -> None:
    for key, kind in _SHAPES.items():
        value = d.get(key)
        if value is not None and not isinstance(value, kind):
            raise ValueError(
                f'{key} must be a {kind.__name__}, not {type(value).__name__}'
            )
    for key in ('num_instances', 'min_count'):
        value = d.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int)
        ):
            raise ValueError(f'{key} must be an integer')
    if not all(
        isinstance(g, dict) for g in d.get('requested_resources') or []
    ):
        raise ValueError('requested_resources must be a list of dicts')


@dataclasses.dataclass
class RequestSpec:
    instance_uuids: list = dataclasses.field(default_factory=list)
    num_instances: int = 1
    min_count: int = 1
    project_id: str | None = None
    user_id: str | None = None
    flavor: Flavor = dataclasses.field(default_factory=Flavor)
    image: ImageMeta | None = None
    availability_zone: str | None = None
    scheduler_hints: dict = dataclasses.field(default_factory=dict)
    instance_group: InstanceGroup | None = None
    requested_resources: list = dataclasses.field(default_factory=list)
    device_profile: str | None = None
    is_bfv: bool = False
    ignore_hosts: list = dataclasses.field(default_factory=list)
    force_hosts: list = dataclasses.field(default_factory=list)
    force_nodes: list = dataclasses.field(default_factory=list)
    retry: dict | None = None
    request_id: str | None = None
    extra: dict = dataclasses.field(default_factory=dict)

    # ------------------------------------------------------------------ wire form
    @classmethod
    def from_dict(cls, d: dict) -> 'RequestSpec':
        if not isinstance(d, dict):
            raise TypeError('request spec must be a dict')
        _check_shapes(d)
        known = (
            set(_SIMPLE)
            | set(_LISTS)
            | {
                'num_instances',
                'min_count',
                'flavor',
                'image',
                'scheduler_hints',
                'instance_group',
                'requested_resources',
                'is_bfv',
                'retry',
            }
        )
        spec = cls(
            flavor=Flavor.from_dict(d.get('flavor')),
            image=ImageMeta.from_dict(d.get('image')),
            instance_group=InstanceGroup.from_dict(d.get('instance_group')),
            scheduler_hints=copy.deepcopy(d.get('scheduler_hints') or {}),
            requested_resources=copy.deepcopy(
                d.get('requested_resources') or []
            ),
            is_bfv=bool(d.get('is_bfv', False)),
            retry=copy.deepcopy(d.get('retry')),
            extra={
                k: copy.deepcopy(v) for k, v in d.items() if k not in known
            },
        )
        for k in _SIMPLE:
            setattr(spec, k, d.get(k))
        for k in _LISTS:
            setattr(spec, k, list(d.get(k) or []))
        spec.num_instances = int(
            d.get('num_instances') or max(1, len(spec.instance_uuids))
        )
        spec.min_count = int(d.get('min_count') or spec.num_instances)
        return spec

    def to_dict(self) -> dict:
        out: dict[str, Any] = {
            'instance_uuids': list(self.instance_uuids),
            'num_instances': self.num_instances,
            'min_count': self.min_count,
            'flavor': self.flavor.to_dict(),
            'image': self.image.to_dict() if self.image is not None else None,
            'scheduler_hints': copy.deepcopy(self.scheduler_hints),
            'instance_group': (
                self.instance_group.to_dict()
                if self.instance_group is not None
                else None
            ),
            'requested_resources': copy.deepcopy(self.requested_resources),
            'is_bfv': self.is_bfv,
            'retry': copy.deepcopy(self.retry),
        }
        for k in _SIMPLE:
            out[k] = getattr(self, k)
        for k in _LISTS:
            out[k] = list(getattr(self, k))
        out.update(copy.deepcopy(self.extra))
        return out

    # ------------------------------------------------------------------ helpers
    @property
    def image_props(self) -> dict:
        return self.image.properties if self.image is not None else {}

    def get_hint(self, name: str, default=None):
        """A scheduler hint; single-element lists are unwrapped (the API may send either)."""
        value = self.scheduler_hints.get(name, default)
        if (
            isinstance(value, list)
            and len(value) == 1
            and name not in ('same_host', 'different_host')
        ):
            return value[0]
        return value

    def hint_list(self, name: str) -> list:
        value = self.scheduler_hints.get(name)
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        return list(value)

    @property
    def retried_hosts(self) -> list:
        return [tuple(h) for h in (self.retry or {}).get('hosts', [])]
