"""RequestSpec (contract 1.0): what the scheduler is asked to place.

The wire form is the dict documented in ``docs/contracts.md``;
``RequestSpec.from_primitive`` and ``RequestSpec.to_primitive`` round-trip
it (unknown keys are kept in ``extra`` so a newer sender does not lose data
through an older hop). Flavor, ImageMeta and InstanceGroup are parts of it,
versioned with it. RequestSpec itself keeps a ``__dict__`` (no slots): the
scheduler's filters cache per-request values on it (``_sched_cache``,
never on the wire).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from nimbus.common.objects import base


def _fields(part):
    """The primitive of a part of the spec (flavor, image, group): a deep
    copy of its fields by name (the spec's primitive carries the version)."""
    return {
        f.name: copy.deepcopy(getattr(part, f.name))
        for f in dataclasses.fields(part)
    }


@dataclasses.dataclass(slots=True)
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
    def from_primitive(cls, d: dict | None) -> 'Flavor':
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

    def to_primitive(self) -> dict:
        return _fields(self)


@dataclasses.dataclass(slots=True)
class ImageMeta:
    id: str | None = None
    name: str | None = None
    properties: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def from_primitive(cls, d: dict | None) -> 'ImageMeta | None':
        if d is None:
            return None
        return cls(
            id=d.get('id'),
            name=d.get('name'),
            properties=dict(d.get('properties') or {}),
        )

    def to_primitive(self) -> dict:
        return _fields(self)


@dataclasses.dataclass(slots=True)
class InstanceGroup:
    uuid: str | None = None
    name: str | None = None
    policy: str | None = None
    rules: dict = dataclasses.field(default_factory=dict)
    members: list = dataclasses.field(default_factory=list)
    hosts: list = dataclasses.field(default_factory=list)

    @classmethod
    def from_primitive(cls, d: dict | None) -> 'InstanceGroup | None':
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

    def to_primitive(self) -> dict:
        return _fields(self)


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


_KNOWN = (
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

    VERSION = '1.0'

    # ------------------------------------------------------------------ wire form
    @classmethod
    def from_primitive(cls, d: dict) -> 'RequestSpec':
        """The spec a primitive describes; MalformedPrimitive (a
        ValueError) when it is not one."""
        base.check(d, 'request_spec', cls.VERSION)
        if not isinstance(d.get('flavor'), dict):
            raise base.MalformedPrimitive('request_spec has no flavor')
        try:
            return cls._from_checked(d)
        except base.MalformedPrimitive:
            raise
        except (TypeError, ValueError) as exc:
            raise base.MalformedPrimitive(
                'bad request_spec: %s' % exc
            ) from exc

    @classmethod
    def _from_checked(cls, d: dict) -> 'RequestSpec':
        _check_shapes(d)
        spec = cls(
            flavor=Flavor.from_primitive(d.get('flavor')),
            image=ImageMeta.from_primitive(d.get('image')),
            instance_group=InstanceGroup.from_primitive(
                d.get('instance_group')
            ),
            scheduler_hints=copy.deepcopy(d.get('scheduler_hints') or {}),
            requested_resources=copy.deepcopy(
                d.get('requested_resources') or []
            ),
            is_bfv=bool(d.get('is_bfv', False)),
            retry=copy.deepcopy(d.get('retry')),
            extra=copy.deepcopy(base.extra(d, _KNOWN)),
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

    def to_primitive(self) -> dict:
        out: dict[str, Any] = {
            base.VERSION_KEY: self.VERSION,
            'instance_uuids': list(self.instance_uuids),
            'num_instances': self.num_instances,
            'min_count': self.min_count,
            'flavor': self.flavor.to_primitive(),
            'image': (
                self.image.to_primitive() if self.image is not None else None
            ),
            'scheduler_hints': copy.deepcopy(self.scheduler_hints),
            'instance_group': (
                self.instance_group.to_primitive()
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

    def for_one_more(self) -> 'RequestSpec':
        """A copy asking for one more instance of this request (no uuid,
        the group's hosts left for the scheduler to recompute from its
        host states): the dry run that explains why the rest of a
        multi-create did not fit."""
        spec = RequestSpec.from_primitive(self.to_primitive())
        spec.num_instances = spec.min_count = 1
        spec.instance_uuids = []
        if spec.instance_group is not None:
            spec.instance_group.hosts = []
        return spec

    def for_move(
        self,
        instance_uuid,
        flavor=None,
        ignore_hosts=(),
        destination=None,
        availability_zone=None,
    ) -> 'RequestSpec':
        """A copy of the spec stored at create for moving one instance
        (the super conductor's real moves and the API's move dry run
        both build it here, through
        :func:`nimbus.conductor.move_claims.move_spec`).

        ``flavor`` (a Flavor) replaces the flavor (a resize);
        ``ignore_hosts`` are never chosen; ``destination`` ({'host',
        'node'}) narrows the choice to that host, which the filters still
        judge; ``availability_zone`` replaces the zone (unshelve, 2.77).
        Forced hosts of the create are dropped: a move is never forced
        past the filters.
        """
        spec = copy.deepcopy(self)
        spec.instance_uuids = [instance_uuid]
        spec.num_instances = spec.min_count = 1
        if flavor is not None:
            spec.flavor = copy.deepcopy(flavor)
        spec.ignore_hosts = sorted(set(ignore_hosts))
        spec.force_hosts, spec.force_nodes = [], []
        spec.retry = None
        spec.extra = dict(spec.extra or {})
        if destination and (
            destination.get('host') or destination.get('node')
        ):
            spec.extra['requested_destination'] = {
                'host': destination.get('host'),
                'node': destination.get('node'),
            }
        else:
            spec.extra.pop('requested_destination', None)
        if availability_zone is not None:
            spec.availability_zone = availability_zone
        return spec

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
