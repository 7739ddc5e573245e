"""InstanceEvent (contract 1.0): an external event for an instance that the
compute API hands to the instance's compute (``external_instance_event``'s
``events``, a list; compute RPC 1.0), as Nova's
``os-server-external-events`` delivers them: ``accelerator-request-bound``
from the accelerator service, one per ARQ.

``name`` (a non-empty string) is required; ``tag`` (the ARQ's uuid for an
accelerator event) a string or null; ``status`` one of ``completed``,
``failed``, ``in-progress`` (Nova's; default ``completed``).
"""

from __future__ import annotations

import dataclasses

from nimbus.common.objects import base

STATUSES = ('completed', 'failed', 'in-progress')


@dataclasses.dataclass(slots=True)
class InstanceEvent:
    name: str
    tag: str | None = None
    status: str = 'completed'

    VERSION = '1.0'

    def __post_init__(self):
        if self.status not in STATUSES:
            raise base.MalformedPrimitive(
                'instance_event: status must be one of %s, not %r'
                % (', '.join(STATUSES), self.status)
            )

    @property
    def key(self):
        """(name, tag): what a waiter waits for."""
        return self.name, self.tag

    @classmethod
    def from_primitive(cls, d: dict) -> 'InstanceEvent':
        name = 'instance_event'
        base.check(d, name, cls.VERSION)
        event = base.expect(d.get('name'), str, name, 'name', False)
        if not event:
            raise base.MalformedPrimitive('%s: name must not be empty' % name)
        return cls(
            name=event,
            tag=base.expect(d.get('tag'), str, name, 'tag'),
            status=base.expect(
                d.get('status', 'completed'), str, name, 'status', False
            ),
        )

    @classmethod
    def list_from_primitive(cls, value) -> list['InstanceEvent']:
        if not isinstance(value, list) or not value:
            raise base.MalformedPrimitive(
                'instance_event: events must be a non-empty list'
            )
        return [cls.from_primitive(item) for item in value]

    def to_primitive(self) -> dict:
        return {
            base.VERSION_KEY: self.VERSION,
            'name': self.name,
            'tag': self.tag,
            'status': self.status,
        }
