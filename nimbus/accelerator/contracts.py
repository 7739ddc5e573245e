"""Contracts of the accelerator RPC messages (docs/contracts.md), typed and
versioned as the compute's (:mod:`nimbus.common.objects`):

- :class:`AcceleratorDevice` 1.0: one element of ``report_devices``'
  ``devices`` (agent -> accelerator service), a device with its
  deployables and their attach handles;
- :class:`AgentArq` 1.0: the ``arq`` of the agent's ``program`` and
  ``release`` (accelerator service's binder -> agent), the ARQ with the
  attach handle it was given.

On the wire each is its primitive, with its version under
``nimbus_object.version``; a primitive without one (an agent or service of
before the contracts) is read as 1.0, a newer minor's unknown fields are
kept in ``extra`` and passed on, another major or a wrong JSON type raises
:class:`~nimbus.common.objects.base.MalformedPrimitive`, which the
endpoints answer as ``InvalidMessage``. ``as_record()`` is the plain dict
the service's and agent's code read.
"""

from __future__ import annotations

import dataclasses

from nimbus.common.objects import base

DEVICE_TYPES = ('FPGA', 'GPU')


def _str(d, name, field, optional=True):
    value = base.expect(d.get(field), str, name, field, optional)
    if not optional and not value:
        raise base.MalformedPrimitive('%s: %s is empty' % (name, field))
    return value


def _list(d, name, field):
    return base.expect(d.get(field), list, name, field) or []


@dataclasses.dataclass(slots=True)
class AttachHandle:
    """What a VM attaches (a PCI function, an mdev): part of both
    contracts."""

    # The contract's field list; alike by design across contracts.
    uuid: str
    attach_type: str
    attach_info: str
    in_use: bool = False

    FIELDS = ('uuid', 'attach_type', 'attach_info', 'in_use')

    @classmethod
    def from_primitive(cls, d, name='attach_handle'):
        if not isinstance(d, dict):
            raise base.MalformedPrimitive('%s must be a JSON object' % name)
        in_use = base.expect(d.get('in_use', False), bool, name, 'in_use')
        return cls(
            _str(d, name, 'uuid', False),
            _str(d, name, 'attach_type', False),
            _str(d, name, 'attach_info', False),
            bool(in_use),
        )

    def to_primitive(self):
        return {f: getattr(self, f) for f in self.FIELDS}


@dataclasses.dataclass(slots=True)
class Deployable:
    # The contract's field list; alike by design across contracts.
    uuid: str
    name: str
    num_accelerators: int
    rp_uuid: str | None = None
    driver_name: str | None = None
    attach_handles: list[AttachHandle] = dataclasses.field(
        default_factory=list
    )

    @classmethod
    def from_primitive(cls, d, name='deployable'):
        if not isinstance(d, dict):
            raise base.MalformedPrimitive('%s must be a JSON object' % name)
        uuid = _str(d, name, 'uuid', False)
        name = '%s %s' % (name, uuid)
        count = base.expect(
            d.get('num_accelerators'), int, name, 'num_accelerators', False
        )
        if count < 0:
            raise base.MalformedPrimitive(
                '%s: num_accelerators is negative' % name
            )
        return cls(
            uuid,
            _str(d, name, 'name', False),
            count,
            _str(d, name, 'rp_uuid'),
            _str(d, name, 'driver_name'),
            [
                AttachHandle.from_primitive(h, name + ' attach handle')
                for h in _list(d, name, 'attach_handles')
            ],
        )

    def to_primitive(self):
        return {
            'uuid': self.uuid,
            'name': self.name,
            'num_accelerators': self.num_accelerators,
            'rp_uuid': self.rp_uuid,
            'driver_name': self.driver_name,
            'attach_handles': [h.to_primitive() for h in self.attach_handles],
        }


@dataclasses.dataclass(slots=True)
class AcceleratorDevice:
    """A device one host's agent found (contract 1.0)."""

    # The contract's field list; alike by design across contracts.
    uuid: str
    type: str
    vendor: str
    model: str
    hostname: str
    std_board_info: str | None = None
    vendor_board_info: str | None = None
    driver_name: str | None = None
    deployables: list[Deployable] = dataclasses.field(default_factory=list)
    extra: dict = dataclasses.field(default_factory=dict)

    VERSION = '1.0'
    _KNOWN = (
        'uuid',
        'type',
        'vendor',
        'model',
        'hostname',
        'std_board_info',
        'vendor_board_info',
        'driver_name',
        'deployables',
    )

    @classmethod
    def from_primitive(cls, d) -> 'AcceleratorDevice':
        name = 'accelerator device'
        base.check(d, name, cls.VERSION)
        uuid = _str(d, name, 'uuid', False)
        name = '%s %s' % (name, uuid)
        kind = d.get('type')
        if kind not in DEVICE_TYPES:
            raise base.MalformedPrimitive(
                '%s: type is %r, not one of %s'
                % (name, kind, ', '.join(DEVICE_TYPES))
            )
        return cls(
            uuid,
            kind,
            _str(d, name, 'vendor', False),
            _str(d, name, 'model', False),
            _str(d, name, 'hostname', False),
            _str(d, name, 'std_board_info'),
            _str(d, name, 'vendor_board_info'),
            _str(d, name, 'driver_name'),
            [
                Deployable.from_primitive(p, name + ' deployable')
                for p in _list(d, name, 'deployables')
            ],
            base.extra(d, cls._KNOWN),
        )

    # The contract's fields spelled out, alike by design in each contract
    # (each versions its own).
    def as_record(self) -> dict:
        out = dict(self.extra)
        out.update(
            {
                'uuid': self.uuid,
                'type': self.type,
                'vendor': self.vendor,
                'model': self.model,
                'hostname': self.hostname,
                'std_board_info': self.std_board_info,
                'vendor_board_info': self.vendor_board_info,
                'driver_name': self.driver_name,
                'deployables': [p.to_primitive() for p in self.deployables],
            }
        )
        return out

    def to_primitive(self) -> dict:
        out = self.as_record()
        out[base.VERSION_KEY] = self.VERSION
        return out


@dataclasses.dataclass(slots=True)
class AgentArq:
    """An ARQ the agent programs or releases (contract 1.0)."""

    # The contract's field list; alike by design across contracts.
    uuid: str
    device_rp_uuid: str
    attach_handle: AttachHandle
    instance_uuid: str | None = None
    extra: dict = dataclasses.field(default_factory=dict)

    VERSION = '1.0'
    _KNOWN = ('uuid', 'device_rp_uuid', 'attach_handle', 'instance_uuid')

    @classmethod
    def from_primitive(cls, d) -> 'AgentArq':
        name = 'arq'
        base.check(d, name, cls.VERSION)
        return cls(
            _str(d, name, 'uuid', False),
            _str(d, name, 'device_rp_uuid', False),
            AttachHandle.from_primitive(
                d.get('attach_handle'), 'arq attach_handle'
            ),
            _str(d, name, 'instance_uuid'),
            base.extra(d, cls._KNOWN),
        )

    @classmethod
    def of(cls, arq, handle) -> 'AgentArq':
        """The binder's: an ARQ record and the handle row it claimed."""
        return cls(
            arq['uuid'],
            arq['device_rp_uuid'],
            AttachHandle(
                handle['uuid'],
                handle['attach_type'],
                handle['attach_info'],
                bool(handle.get('in_use', False)),
            ),
            arq.get('instance_uuid'),
        )

    # The contract's fields spelled out, alike by design in each contract
    # (each versions its own).
    def as_record(self) -> dict:
        out = dict(self.extra)
        out.update(
            {
                'uuid': self.uuid,
                'device_rp_uuid': self.device_rp_uuid,
                'instance_uuid': self.instance_uuid,
                'attach_handle': self.attach_handle.to_primitive(),
            }
        )
        return out

    def to_primitive(self) -> dict:
        out = self.as_record()
        out[base.VERSION_KEY] = self.VERSION
        return out
