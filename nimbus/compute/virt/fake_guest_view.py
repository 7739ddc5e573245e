"""What one sees of a simulated guest (:mod:`nimbus.compute.virt.fake`):
its console, the boot log and a line for every action on it (the last
``CONSOLE_LINES`` kept), and its diagnostics (Nova's 2.48 form), figures
read from its flavor that grow with its uptime. Functions over the
guest's record; the driver holds the lock and the power states.
"""

import time

# Console lines kept per guest.
CONSOLE_LINES = 100

# What a simulated guest writes on its console as it boots (a real one
# writes a boot log of many lines; clients such as Tempest expect more
# than a line or two).
BOOT_LOG = (
    'firmware: starting the boot loader',
    'kernel: loaded, mounting the root disk',
    'init: reached the multi-user target',
    'booted',
)


def console_line(instance_uuid, what):
    return '[%s] instance-%s: %s' % (
        time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
        instance_uuid,
        what,
    )


def boot_console(instance_uuid):
    """The console of a guest just spawned: its boot log."""
    return [console_line(instance_uuid, step) for step in BOOT_LOG]


def write(guest, instance_uuid, what):
    """A line on ``guest``'s console, the oldest beyond the last
    ``CONSOLE_LINES`` dropped."""
    console = guest.setdefault('console', [])
    console.append(console_line(instance_uuid, what))
    del console[:-CONSOLE_LINES]


def console_output(guest):
    return ''.join(line + '\n' for line in guest.get('console', []))


def diagnostics(guest, state, uptime, hypervisor_type):
    """Nova's 2.48 diagnostics of ``guest`` in power state ``state`` (its
    name), up ``uptime`` seconds: its flavor's CPUs, memory and disk."""
    flavor = guest.get('flavor') or {}
    vcpus = int(flavor.get('vcpus') or 1)
    memory_mb = int(flavor.get('memory_mb') or 0)
    return {
        'state': state,
        # Nova's Diagnostics takes one of its drivers' names (libvirt,
        # xenapi, vmwareapi, ironic, hyperv); its fake driver says
        # libvirt, and so does this one.
        'driver': 'libvirt',
        'hypervisor': hypervisor_type.lower(),
        'hypervisor_os': 'fake-os',
        'uptime': uptime,
        'config_drive': False,
        'num_cpus': vcpus,
        'num_nics': 0,
        'num_disks': 1,
        'cpu_details': [
            {'id': i, 'time': uptime * 1000000000, 'utilisation': None}
            for i in range(vcpus)
        ],
        'nic_details': [],
        'disk_details': [
            {
                'read_bytes': 0,
                'read_requests': 0,
                'write_bytes': 0,
                'write_requests': 0,
                'errors_count': 0,
            }
        ],
        'memory_details': {'maximum': memory_mb, 'used': 0},
    }
