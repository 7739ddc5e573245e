"""Selection (contract 1.0): one host the scheduler chose for an instance.

``select_destinations`` answers, per instance, ``[selected, *alternates]``
(``[]`` for an instance it could not place). The super conductor builds on
the first, the compute claims nothing itself, and the cell conductor
claims an alternate's ``allocation_request`` when a build fails.
``availability_zone`` is set by the super conductor when the server asked
for none (the zone each host would give it).

A Selection and its primitive share their nested values (the allocation
request, the limits): primitives go straight onto the bus, and copying
every allocation request of a multi-create would cost the scheduler's hot
path for nothing. Copy before changing one.
"""

from __future__ import annotations

import dataclasses

from nimbus.common.objects import base

# The keys of the wire form, in order; a newer minor's others go to extra.
_FIELDS = (
    'service_host',
    'nodename',
    'compute_node_uuid',
    'cell_uuid',
    'allocation_request',
    'allocation_request_version',
    'limits',
    'availability_zone',
)
_OPTIONAL_STR = (
    'nodename',
    'compute_node_uuid',
    'cell_uuid',
    'allocation_request_version',
    'availability_zone',
)


@dataclasses.dataclass(slots=True)
class Selection:
    service_host: str
    # None only from the scheduler's in-memory runs (no placement answer);
    # the conductors refuse such a selection.
    allocation_request: dict | None
    nodename: str | None = None
    compute_node_uuid: str | None = None
    cell_uuid: str | None = None
    allocation_request_version: str | None = None
    limits: dict = dataclasses.field(default_factory=dict)
    availability_zone: str | None = None
    extra: dict = dataclasses.field(default_factory=dict)

    VERSION = '1.0'

    @property
    def allocations(self) -> dict:
        """The allocation request's ``{provider uuid: {resources}}``."""
        return (self.allocation_request or {}).get('allocations') or {}

    @classmethod
    def from_primitive(cls, d: dict) -> 'Selection':
        name = 'selection'
        base.check(d, name, cls.VERSION)
        selection = cls(
            service_host=base.expect(
                d.get('service_host'), str, name, 'service_host', False
            ),
            allocation_request=base.expect(
                d.get('allocation_request'), dict, name, 'allocation_request'
            ),
            limits=base.expect(d.get('limits'), dict, name, 'limits') or {},
            extra=base.extra(d, _FIELDS),
        )
        for key in _OPTIONAL_STR:
            setattr(selection, key, base.expect(d.get(key), str, name, key))
        return selection

    def to_primitive(self) -> dict:
        out = {
            base.VERSION_KEY: self.VERSION,
            'service_host': self.service_host,
            'nodename': self.nodename,
            'compute_node_uuid': self.compute_node_uuid,
            'cell_uuid': self.cell_uuid,
            'allocation_request': self.allocation_request,
            'allocation_request_version': self.allocation_request_version,
            'limits': self.limits,
        }
        if self.availability_zone is not None:
            out['availability_zone'] = self.availability_zone
        if self.extra:
            out.update(self.extra)
        return out


def list_from_primitive(values, name='host_list') -> list[Selection]:
    """A list of Selection primitives (a host list) as Selections."""
    if not isinstance(values, list):
        raise base.MalformedPrimitive(
            '%s must be a list of selections, not %s'
            % (name, type(values).__name__)
        )
    return [Selection.from_primitive(v) for v in values]


def list_to_primitive(selections) -> list[dict]:
    return [s.to_primitive() for s in selections]
