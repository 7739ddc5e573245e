"""ServiceHeartbeats (contract 1.0): the heartbeats of many services of one
binary in one message (``service_heartbeats`` to a cell conductor).

A process that runs many simulated hosts sends one of these per
``report_interval`` instead of one call per host: ``hosts`` are the hosts
alive in the process at that moment, every one of them with ``binary``. A
host missing from the batch (stopped, killed, broken) is simply not
refreshed and goes down after ``service_down_time``, as a host whose own
heartbeat stopped would.
"""

from __future__ import annotations

import dataclasses

from nimbus.common.objects import base

# A cell conductor writes one batch in one transaction; past this many
# hosts a sender splits it (the IN list and the message stay small).
MAX_HOSTS = 5000


@dataclasses.dataclass(slots=True)
class ServiceHeartbeats:
    binary: str
    hosts: list[str]
    availability_zone: str | None = None

    VERSION = '1.0'

    @classmethod
    def from_primitive(cls, d: dict) -> 'ServiceHeartbeats':
        name = 'heartbeats'
        base.check(d, name, cls.VERSION)
        binary = base.expect(d.get('binary'), str, name, 'binary', False)
        hosts = base.expect(d.get('hosts'), list, name, 'hosts', False)
        if not binary:
            raise base.MalformedPrimitive('%s: binary is empty' % name)
        if not all(isinstance(h, str) and h for h in hosts):
            raise base.MalformedPrimitive(
                '%s: hosts must be non-empty strings' % name
            )
        if len(hosts) > MAX_HOSTS:
            raise base.MalformedPrimitive(
                '%s: %d hosts in one batch (at most %d)'
                % (name, len(hosts), MAX_HOSTS)
            )
        zone = base.expect(
            d.get('availability_zone'), str, name, 'availability_zone'
        )
        return cls(binary, list(dict.fromkeys(hosts)), zone)

    def to_primitive(self) -> dict:
        out = {
            base.VERSION_KEY: self.VERSION,
            'binary': self.binary,
            'hosts': list(self.hosts),
        }
        if self.availability_zone is not None:
            out['availability_zone'] = self.availability_zone
        return out

    def batches(self, size=MAX_HOSTS):
        """This batch cut into batches of at most ``size`` hosts."""
        for start in range(0, len(self.hosts), size):
            yield ServiceHeartbeats(
                self.binary,
                self.hosts[start : start + size],
                self.availability_zone,
            )
