"""A simulated hypervisor.

Guests are records in a JSON file under ``state_path``, so they survive a
restart (or a ``kill -9``) of the agent the way real guests survive a
restart of nova-compute. ``[fake_driver] fail_builds`` makes every spawn
fail; ``pgpus`` models physical GPUs as child providers, which also
exercises the reshape path: a host that used to report CUSTOM_PGPU on the
root moves that inventory, and its allocations, to the GPU children. What
a guest shows, its console and diagnostics, is
:mod:`nimbus.compute.virt.fake_guest_view`.
"""

import os
import random
import threading
import time
import uuid as uuidlib

from oslo_log import log as logging
import orjson

from nimbus.compute import exception
from nimbus.compute.virt import driver
from nimbus.compute.virt import fake_guest_view as view

LOG = logging.getLogger(__name__)

# Nova's power states.
NOSTATE = 0
RUNNING = 1
PAUSED = 3
SHUTDOWN = 4
SUSPENDED = 7
_POWER_NAMES = {
    NOSTATE: 'pending',
    RUNNING: 'running',
    PAUSED: 'paused',
    SHUTDOWN: 'shutdown',
    SUSPENDED: 'suspended',
}

_PGPU_NAMESPACE = uuidlib.UUID('5c8bd3a2-6a2d-4d0e-9c5e-9b2f0f6f1c11')


class HostHalted(BaseException):
    """Raised in a spawn of a halted fake host. A BaseException, so that no
    ``except Exception`` on the way up runs any cleanup: like a process
    killed mid-build, the build just stops."""


def host_size(conf, host):
    """``(vcpus, memory_mb, disk_gb)`` of simulated ``host``: the
    ``[fake_driver]`` sizes, or, where a ``*_max`` option is above its
    size, a value in between drawn from ``spread_seed`` and the host name
    (the same on every start)."""
    opts = conf.fake_driver
    draw = random.Random('%s/%s' % (opts.spread_seed, host))

    def pick(low, high, step=1):
        if not high or high <= low:
            return low
        return low + draw.randint(0, (high - low) // step) * step

    return (
        pick(opts.vcpus, opts.vcpus_max),
        pick(opts.memory_mb, opts.memory_mb_max, 1024),
        pick(opts.disk_gb, opts.disk_gb_max),
    )


class FakeDriver(driver.ComputeDriver):
    def __init__(self, conf, host):
        super().__init__(conf, host)
        self.opts = conf.fake_driver
        self._lock = threading.Lock()
        self._path = os.path.join(
            conf.state_path, 'fake-virt', '%s.json' % host
        )
        self._guests = self._load()
        self._halted = threading.Event()
        self.vcpus, self.memory_mb, self.disk_gb = host_size(conf, host)
        self._started = time.time()

    def _load(self):
        try:
            with open(self._path, 'rb') as f:
                return orjson.loads(f.read())
        except FileNotFoundError:
            return {}

    def _save(self):
        os.makedirs(os.path.dirname(self._path), exist_ok=True)
        tmp = self._path + '.tmp'
        # orjson: json.dump encodes in pure Python (once per spawn).
        with open(tmp, 'wb') as f:
            f.write(orjson.dumps(self._guests, option=orjson.OPT_NON_STR_KEYS))
        os.replace(tmp, self._path)

    def node_facts(self):
        cells = self.opts.numa_cells
        cpus = list(range(self.vcpus))
        per_cell = max(1, len(cpus) // cells)
        numa = [
            {
                'id': i,
                'cpuset': cpus[i * per_cell : (i + 1) * per_cell],
                'pinned_cpus': [],
                'memory_mb': self.memory_mb // cells,
                'memory_usage': 0,
            }
            for i in range(cells)
        ]
        return {
            'vcpus': self.vcpus,
            'memory_mb': self.memory_mb,
            'local_gb': self.disk_gb,
            'hypervisor_type': self.opts.hypervisor_type,
            'hypervisor_version': self.opts.hypervisor_version,
            'cpu_info': {
                'arch': 'x86_64',
                'vendor': 'Intel',
                'features': list(self.opts.cpu_features),
            },
            'numa_topology': {'cells': numa},
            'pci_stats': [],
            'supported_instances': [['x86_64', 'qemu', 'hvm']],
            'stats': dict(self.opts.stats),
        }

    def pgpu_uuid(self, root_uuid, index):
        return str(
            uuidlib.uuid5(_PGPU_NAMESPACE, '%s/%d' % (root_uuid, index))
        )

    def update_provider_tree(self, provider_tree, nodename, allocations=None):
        root = provider_tree.find_by_name(nodename)
        conf = self.conf.compute
        current = root.inventory

        def ratio(rc):
            return driver.allocation_ratio(self.conf, rc, current)

        inventory = {
            'VCPU': {
                'total': self.vcpus,
                'reserved': conf.reserved_host_cpus,
                'min_unit': 1,
                'max_unit': self.vcpus,
                'step_size': 1,
                'allocation_ratio': ratio('VCPU'),
            },
            'MEMORY_MB': {
                'total': self.memory_mb,
                'reserved': conf.reserved_host_memory_mb,
                'min_unit': 1,
                'max_unit': self.memory_mb,
                'step_size': 1,
                'allocation_ratio': ratio('MEMORY_MB'),
            },
            'DISK_GB': {
                'total': self.disk_gb,
                'reserved': conf.reserved_host_disk_mb // 1024,
                'min_unit': 1,
                'max_unit': self.disk_gb,
                'step_size': 1,
                'allocation_ratio': ratio('DISK_GB'),
            },
        }
        old_root_pgpu = root.inventory.get('CUSTOM_PGPU')
        if self.opts.pgpus and old_root_pgpu is not None:
            # PGPU inventory used to live on the root: moving it (and its
            # allocations) to child providers is a reshape.
            if allocations is None:
                raise exception.ReshapeNeeded()
            self._move_pgpu_allocations(root.uuid, allocations)
        provider_tree.update_inventory(root.uuid, inventory)
        # The fake driver attaches bound accelerators at spawn.
        traits = {
            'COMPUTE_NODE',
            'COMPUTE_ACCELERATORS',
            'HW_CPU_X86_AVX2'
            if 'avx2' in self.opts.cpu_features
            else 'HW_CPU_X86_SSE42',
        }
        traits |= set(self.opts.traits)
        # Keep traits others set (COMPUTE_STATUS_DISABLED) on the root.
        keep = {t for t in root.traits if t == 'COMPUTE_STATUS_DISABLED'}
        provider_tree.update_traits(root.uuid, traits | keep)
        for index in range(self.opts.pgpus):
            child = self.pgpu_uuid(root.uuid, index)
            if not provider_tree.exists(child):
                provider_tree.new_child(
                    '%s_pgpu%d' % (nodename, index), root.uuid, child
                )
            provider_tree.update_inventory(
                child,
                {
                    'CUSTOM_PGPU': {
                        'total': 4,
                        'reserved': 0,
                        'min_unit': 1,
                        'max_unit': 4,
                        'step_size': 1,
                        'allocation_ratio': 1.0,
                    }
                },
            )
            provider_tree.update_traits(child, {'CUSTOM_GPU_PRODUCT_ID_1EB8'})

    def _move_pgpu_allocations(self, root_uuid, allocations):
        slots = {
            self.pgpu_uuid(root_uuid, i): 4 for i in range(self.opts.pgpus)
        }
        for record in allocations.values():
            root_alloc = record['allocations'].get(root_uuid)
            if not root_alloc:
                continue
            amount = root_alloc['resources'].pop('CUSTOM_PGPU', 0)
            while amount:
                child = max(slots, key=slots.get)
                take = min(amount, slots[child])
                if take == 0:
                    raise exception.ReshapeFailed(
                        reason='not enough PGPU capacity on the children'
                    )
                slots[child] -= take
                amount -= take
                child_alloc = record['allocations'].setdefault(
                    child, {'resources': {}}
                )
                child_alloc['resources']['CUSTOM_PGPU'] = (
                    child_alloc['resources'].get('CUSTOM_PGPU', 0) + take
                )

    def halt(self):
        """Simulate the host dying (``kill -9``): spawns under way stop
        where they are, with nothing saved and nothing reported."""
        self._halted.set()

    def is_halted(self):
        return self._halted.is_set()

    def spawn(self, instance, allocations, accel_info=None, power_on=True):
        if self.opts.spawn_seconds:
            self._halted.wait(self.opts.spawn_seconds)
        if self._halted.is_set():
            raise HostHalted(self.host)
        if self.opts.fail_builds:
            raise RuntimeError(
                'simulated hypervisor failure on %s' % self.host
            )
        with self._lock:
            self._guests[instance.uuid] = {
                'name': instance.display_name,
                'flavor': instance.flavor,
                'accelerators': accel_info or [],
                'image_ref': instance.image_ref,
                'power': RUNNING if power_on else SHUTDOWN,
                'console': view.boot_console(instance.uuid)
                if power_on
                else [
                    view.console_line(instance.uuid, 'defined, not started')
                ],
                'boots': 1 if power_on else 0,
                'started': time.time(),
            }
            self._save()

    def prep_resize(self, instance_uuid, flavor):
        if self.opts.fail_builds:
            raise RuntimeError(
                'simulated hypervisor failure on %s' % self.host
            )

    def check_can_live_migrate_destination(self, instance_uuid, flavor):
        self.prep_resize(instance_uuid, flavor)

    def destroy(self, instance_uuid):
        with self._lock:
            if self._guests.pop(instance_uuid, None) is not None:
                self._save()

    # -- actions on a guest (issue 24, section 1) ---------------------------

    def _change(
        self, instance_uuid, action, allowed, power, note=None, boot=False
    ):
        """Move the guest from one of the ``allowed`` power states to
        ``power`` (None: it stays as it is), with a console line; the
        guest record."""
        with self._lock:
            guest = self._guest(instance_uuid)
            current = guest.get('power', RUNNING)
            if power is None:
                power = current
            if allowed is not None and current not in allowed:
                raise exception.GuestStateError(
                    instance=instance_uuid,
                    state=_POWER_NAMES.get(current, current),
                    action=action,
                )
            if power == RUNNING and (boot or current != RUNNING):
                guest['started'] = time.time()
                guest['boots'] = guest.get('boots', 1) + 1
            guest['power'] = power
            view.write(guest, instance_uuid, note or action)
            self._save()
            return guest

    def power_off(self, instance_uuid):
        self._change(instance_uuid, 'power off', None, SHUTDOWN)

    def power_on(self, instance_uuid):
        self._change(instance_uuid, 'power on', None, RUNNING)

    def reboot(self, instance_uuid, reboot_type):
        """A soft reboot needs a running guest; a hard one boots the guest
        from any state. Either is a new boot."""
        self._change(
            instance_uuid,
            'reboot',
            (RUNNING,) if reboot_type == 'SOFT' else None,
            RUNNING,
            '%s reboot' % reboot_type.lower(),
            boot=True,
        )

    def pause(self, instance_uuid):
        self._change(instance_uuid, 'pause', (RUNNING,), PAUSED)

    def unpause(self, instance_uuid):
        self._change(instance_uuid, 'unpause', (PAUSED,), RUNNING)

    def suspend(self, instance_uuid):
        self._change(instance_uuid, 'suspend', (RUNNING,), SUSPENDED)

    def resume(self, instance_uuid):
        self._change(instance_uuid, 'resume', (SUSPENDED,), RUNNING)

    def rescue(self, instance_uuid, rescue_image_ref):
        guest = self._change(
            instance_uuid,
            'rescue',
            None,
            RUNNING,
            'rescue boot from image %s' % rescue_image_ref,
        )
        with self._lock:
            guest['rescue_image_ref'] = rescue_image_ref
            self._save()

    def unrescue(self, instance_uuid):
        guest = self._change(instance_uuid, 'unrescue', None, RUNNING)
        with self._lock:
            guest.pop('rescue_image_ref', None)
            self._save()

    def rebuild(self, instance_uuid, image_ref, preserve_ephemeral, power_on):
        if self.opts.fail_builds:
            raise RuntimeError(
                'simulated hypervisor failure on %s' % self.host
            )
        guest = self._change(
            instance_uuid,
            'rebuild',
            None,
            RUNNING if power_on else SHUTDOWN,
            'rebuilt from image %s%s'
            % (image_ref, ', ephemeral kept' if preserve_ephemeral else ''),
        )
        with self._lock:
            guest['image_ref'] = image_ref
            guest['rebuilds'] = guest.get('rebuilds', 0) + 1
            self._save()

    def snapshot(self, instance_uuid, image_id):
        """The simulated guest has no disk to copy: the snapshot is the
        image record the compute API made; the guest keeps running."""
        self._change(
            instance_uuid,
            'snapshot',
            None,
            None,
            'snapshot into image %s' % image_id,
        )

    def set_admin_password(self, instance_uuid, password):
        # Only the fact is kept (never the password).
        self._change(
            instance_uuid, 'set password', (RUNNING,), RUNNING, 'password set'
        )

    def _guest(self, instance_uuid):
        """The guest's record (under the lock); GuestNotFound if none."""
        guest = self._guests.get(instance_uuid)
        if guest is None:
            raise exception.GuestNotFound(
                instance=instance_uuid, host=self.host
            )
        return guest

    def get_console_output(self, instance_uuid):
        with self._lock:
            return view.console_output(self._guest(instance_uuid))

    def power_state(self, instance_uuid):
        with self._lock:
            guest = self._guests.get(instance_uuid)
            return NOSTATE if guest is None else guest.get('power', RUNNING)

    def get_diagnostics(self, instance_uuid):
        """Nova's 2.48 diagnostics of the simulated guest (see
        :func:`~nimbus.compute.virt.fake_guest_view.diagnostics`)."""
        with self._lock:
            guest = dict(self._guest(instance_uuid))
        power = guest.get('power', RUNNING)
        uptime = (
            int(time.time() - guest.get('started', self._started))
            if power == RUNNING
            else 0
        )
        return view.diagnostics(
            guest,
            _POWER_NAMES.get(power, 'pending'),
            uptime,
            self.opts.hypervisor_type,
        )

    def attached_arqs(self, instance_uuid):
        """The uuids of the ARQs the guest was spawned with (tests)."""
        with self._lock:
            guest = self._guests.get(instance_uuid) or {}
            return sorted(a['uuid'] for a in guest.get('accelerators') or [])

    def list_instances(self):
        with self._lock:
            return sorted(self._guests)

    def get_host_uptime(self):
        """``uptime``'s line, the host being up since the driver started
        (its load average is the machine's)."""
        return uptime_line(time.time(), self._started, os.getloadavg())


def uptime_line(now, since, load):
    """`` HH:MM:SS up D days, H:MM,  0 users,  load average: a, b, c``
    (the clock is UTC)."""
    up = max(int(now - since), 0)
    days, rest = divmod(up, 86400)
    return ' %s up %d days, %d:%02d,  0 users,  load average: %s' % (
        time.strftime('%H:%M:%S', time.gmtime(now)),
        days,
        rest // 3600,
        rest % 3600 // 60,
        ', '.join('%.2f' % value for value in load),
    )
