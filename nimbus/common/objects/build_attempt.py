"""BuildAttempt (contract 1.0): one try at building an instance on one
host, as the compute reports it with its final swap (``instance_update``'s
``build_attempt``, conductor RPC 1.4).

``host`` and ``result`` (``success``, ``failed``, ``group-policy``,
``handed-back``... the compute's word for how the try ended) are
required strings; ``node`` and ``reason`` strings or null. The cell
records it once per (instance, host, result) in the same transaction as
the swap.
"""

from __future__ import annotations

import dataclasses

from nimbus.common.objects import base


@dataclasses.dataclass(slots=True)
class BuildAttempt:
    host: str
    result: str
    node: str | None = None
    reason: str | None = None

    VERSION = '1.0'

    @classmethod
    def from_primitive(cls, d: dict) -> 'BuildAttempt':
        name = 'build_attempt'
        base.check(d, name, cls.VERSION)
        unknown = sorted(set(d) - {f.name for f in dataclasses.fields(cls)})
        unknown = [k for k in unknown if k != base.VERSION_KEY]
        if unknown:
            raise base.MalformedPrimitive(
                '%s: unknown key(s) %s' % (name, ', '.join(unknown))
            )
        values = {}
        for field in ('host', 'result'):
            values[field] = base.expect(d.get(field), str, name, field, False)
            if not values[field]:
                raise base.MalformedPrimitive(
                    '%s: %s must not be empty' % (name, field)
                )
        for field in ('node', 'reason'):
            values[field] = base.expect(d.get(field), str, name, field)
        return cls(**values)

    def to_primitive(self) -> dict:
        return base.primitive(self, self.VERSION)
