"""ActionEvent (contract 1.0): one step of an instance action that a
compute reports to its cell conductor (``instance_action_event``), for
os-instance-actions.

``phase`` is ``start`` or ``finish``; a finish carries ``result``
(``Success`` or ``Error``) and, on an error, ``traceback`` (what went
wrong; shown to admins) and ``details`` (shown to the server's owner from
2.84). ``last`` on a finish also ends the action. ``time`` is the moment
it happened on the compute (ISO 8601, UTC).
"""

from __future__ import annotations

import dataclasses

from nimbus.common.objects import base

PHASES = ('start', 'finish')
RESULTS = ('Success', 'Error')


@dataclasses.dataclass(slots=True)
class ActionEvent:
    instance_uuid: str
    request_id: str
    event: str
    host: str
    phase: str
    time: str
    result: str | None = None
    traceback: str | None = None
    details: str | None = None
    last: bool = False

    VERSION = '1.0'

    def __post_init__(self):
        if self.phase not in PHASES:
            raise base.MalformedPrimitive(
                'action_event: phase must be one of %s, not %r'
                % (', '.join(PHASES), self.phase)
            )
        if self.phase == 'finish' and self.result not in RESULTS:
            raise base.MalformedPrimitive(
                'action_event: a finish needs a result of %s, not %r'
                % (', '.join(RESULTS), self.result)
            )

    @classmethod
    def from_primitive(cls, d: dict) -> 'ActionEvent':
        name = 'action_event'
        base.check(d, name, cls.VERSION)
        values = {}
        for field in ('instance_uuid', 'request_id', 'event', 'host'):
            values[field] = base.expect(d.get(field), str, name, field, False)
            if not values[field]:
                raise base.MalformedPrimitive(
                    '%s: %s must not be empty' % (name, field)
                )
        values['phase'] = base.expect(
            d.get('phase'), str, name, 'phase', False
        )
        values['time'] = base.expect(d.get('time'), str, name, 'time', False)
        for field in ('result', 'traceback', 'details'):
            values[field] = base.expect(d.get(field), str, name, field)
        values['last'] = bool(
            base.expect(d.get('last', False), bool, name, 'last')
        )
        return cls(**values)

    def to_primitive(self) -> dict:
        return base.primitive(self, self.VERSION)
