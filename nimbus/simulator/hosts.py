"""Simulated hosts: their size, allocation ratios, reserved amounts and
accelerator devices, as compute node records (for the scheduler's host
states) and as resource provider trees (for placement).

A host spec is ``key=value`` items separated by commas::

    vcpus=32,ram=131072,disk=2000,cpu_ratio=4,ram_ratio=1,disk_ratio=1,
    reserved_ram=512,reserved_disk=0,devices=FPGA:2+PGPU:1,device_hosts=0.5

``devices``: per device class ``RC:count`` (``+`` between classes); each
device is a child provider of the host (``<host>_<rc>_<n>``, inventory 1 of
``RC``, trait ``CUSTOM_<RC>_SIM``), as the accelerator agent registers one
provider per device. Hosts with devices carry ``COMPUTE_ACCELERATORS`` on
their root, which device-profile requests need. ``device_hosts``: the
fraction of hosts that have the devices (spread evenly over the hosts).
"""

import dataclasses
import uuid as uuidlib

from nimbus.scheduler import testing

NAMESPACE = uuidlib.UUID('5f0c2a1e-7d3b-4a8e-9c61-2b7f4d3e9a10')
BASE_RCS = ('VCPU', 'MEMORY_MB', 'DISK_GB')
ACCELERATOR_TRAIT = 'COMPUTE_ACCELERATORS'


def device_trait(rc):
    """The trait every simulated device of class ``rc`` carries."""
    return 'CUSTOM_%s_SIM' % rc.removeprefix('CUSTOM_')


@dataclasses.dataclass
class HostSpec:
    vcpus: int = 32
    ram: int = 131072
    disk: int = 2000
    cpu_ratio: float = 4.0
    ram_ratio: float = 1.0
    disk_ratio: float = 1.0
    reserved_ram: int = 0
    reserved_disk: int = 0
    devices: dict = dataclasses.field(default_factory=dict)
    device_hosts: float = 1.0

    def inventories(self):
        """``{rc: (total, reserved, allocation_ratio)}`` of a host's root."""
        return {
            'VCPU': (self.vcpus, 0, self.cpu_ratio),
            'MEMORY_MB': (self.ram, self.reserved_ram, self.ram_ratio),
            'DISK_GB': (self.disk, self.reserved_disk, self.disk_ratio),
        }

    def has_devices(self, i, hosts):
        """Whether host ``i`` of ``hosts`` carries the devices."""
        if not self.devices or self.device_hosts <= 0:
            return False
        wanted = round(self.device_hosts * hosts)
        return (i * wanted) // hosts != ((i + 1) * wanted) // hosts


def parse_host_spec(text):
    spec = HostSpec()
    fields = {f.name: f.type for f in dataclasses.fields(HostSpec)}
    for item in (text or '').split(','):
        if not item.strip():
            continue
        key, sep, value = item.partition('=')
        key, value = key.strip(), value.strip()
        if not sep or key not in fields:
            raise ValueError(
                'bad --host-spec item %r (keys: %s)'
                % (item, ', '.join(sorted(fields)))
            )
        if key == 'devices':
            spec.devices = _devices(value)
            continue
        try:
            number = (
                float(value) if fields[key] in (float, 'float') else int(value)
            )
        except ValueError as exc:
            raise ValueError(
                '--host-spec %s=%r is not a number' % (key, value)
            ) from exc
        if number < 0:
            raise ValueError('--host-spec %s must not be negative' % key)
        setattr(spec, key, number)
    return spec


def _devices(text):
    out = {}
    for part in text.split('+'):
        if not part:
            continue
        rc, _, count = part.partition(':')
        rc = rc.strip().upper()
        if not rc.replace('_', '').isalnum():
            raise ValueError('bad device class %r' % rc)
        try:
            out[rc] = int(count or 1)
        except ValueError as exc:
            raise ValueError('bad device count in %r' % part) from exc
    return out


def device_uuid(host_uuid, rc, n):
    return str(uuidlib.uuid5(NAMESPACE, '%s/%s/%d' % (host_uuid, rc, n)))


def build(hosts, spec, rng):
    """``(nodes, services, trees)``: compute node records and service
    records for the host manager, and per host its provider tree: a list
    of ``(uuid, name, parent_uuid, {rc: (total, reserved, ratio)},
    traits)``, root first."""
    nodes, services, trees = [], [], []
    inventories = spec.inventories()
    for i in range(hosts):
        node = testing.compute_node(
            i,
            rng,
            vcpus=spec.vcpus,
            memory_mb=spec.ram,
            local_gb=spec.disk,
            vcpus_used=0,
            memory_mb_used=0,
            local_gb_used=0,
            pci_stats=[],
            num_io_ops=0,
            failed_builds=0,
            metrics={},
            cell_uuid='cell-%d' % (i % 2 + 1),
        )
        node['cpu_allocation_ratio'] = spec.cpu_ratio
        node['ram_allocation_ratio'] = spec.ram_ratio
        node['disk_allocation_ratio'] = spec.disk_ratio
        nodes.append(node)
        services.append(
            {
                'host': node['host'],
                'binary': 'nimbus-compute',
                'disabled': False,
                'up': True,
            }
        )
        root = node['uuid']
        devices = spec.has_devices(i, hosts)
        tree = [
            (
                root,
                node['host'],
                None,
                dict(inventories),
                (ACCELERATOR_TRAIT,) if devices else (),
            )
        ]
        if devices:
            for rc, count in sorted(spec.devices.items()):
                for n in range(count):
                    tree.append(
                        (
                            device_uuid(root, rc, n),
                            '%s_%s_%d' % (node['host'], rc.lower(), n),
                            root,
                            {rc: (1, 0, 1.0)},
                            (device_trait(rc),),
                        )
                    )
        trees.append(tree)
    return nodes, services, trees


def resource_classes(spec):
    return list(BASE_RCS) + sorted(spec.devices)
