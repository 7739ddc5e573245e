"""Options of nimbus-compute and its fake virt driver."""

from oslo_config import cfg

from nimbus.messaging_internals import simulated

COMPUTE_OPTS = [
    cfg.StrOpt(
        'compute_driver',
        default='fake',
        help='Virt driver: "fake" simulates a hypervisor (guests are '
        'records in a state file), or a dotted class path.',
    ),
    cfg.FloatOpt(
        'cpu_allocation_ratio',
        default=None,
        min=0.0,
        help='VCPU allocation ratio reported to placement on every '
        'update. Unset (or 0.0): the ratio placement has is '
        'kept, so an operator may change it there; '
        'initial_cpu_allocation_ratio is used only when the '
        'VCPU inventory is first created.',
    ),
    cfg.FloatOpt(
        'ram_allocation_ratio',
        default=None,
        min=0.0,
        help='MEMORY_MB allocation ratio reported on every update. '
        "Unset (or 0.0): placement's ratio is kept; "
        'initial_ram_allocation_ratio is used only when the '
        'MEMORY_MB inventory is first created.',
    ),
    cfg.FloatOpt(
        'disk_allocation_ratio',
        default=None,
        min=0.0,
        help='DISK_GB allocation ratio reported on every update. '
        "Unset (or 0.0): placement's ratio is kept; "
        'initial_disk_allocation_ratio is used only when the '
        'DISK_GB inventory is first created.',
    ),
    cfg.FloatOpt(
        'initial_cpu_allocation_ratio',
        default=4.0,
        min=0.0,
        help='VCPU allocation ratio of a new VCPU inventory when '
        'cpu_allocation_ratio is unset.',
    ),
    cfg.FloatOpt(
        'initial_ram_allocation_ratio',
        default=1.0,
        min=0.0,
        help='MEMORY_MB allocation ratio of a new MEMORY_MB '
        'inventory when ram_allocation_ratio is unset.',
    ),
    cfg.FloatOpt(
        'initial_disk_allocation_ratio',
        default=1.0,
        min=0.0,
        help='DISK_GB allocation ratio of a new DISK_GB inventory '
        'when disk_allocation_ratio is unset.',
    ),
    cfg.IntOpt(
        'reserved_host_memory_mb',
        default=512,
        min=0,
        help='Memory kept for the host itself: reported as reserved '
        'MEMORY_MB in placement.',
    ),
    cfg.IntOpt(
        'reserved_host_disk_mb',
        default=0,
        min=0,
        help='Disk kept for the host (MB; reported as whole GB of '
        'reserved DISK_GB).',
    ),
    cfg.IntOpt(
        'reserved_host_cpus',
        default=0,
        min=0,
        help='CPUs kept for the host: reported as reserved VCPU.',
    ),
    cfg.IntOpt(
        'update_resources_interval',
        default=60,
        min=1,
        help='Seconds between resource tracker updates.',
    ),
    cfg.IntOpt(
        'provider_tree_refresh_interval',
        default=300,
        min=0,
        help='Seconds the resource tracker trusts its copy of the '
        'provider tree (inventories, traits, aggregates as placement '
        'last had them) before reading it from placement again. In '
        'between, a periodic update asks placement nothing and writes '
        'only what the driver changed, and the compute node record is '
        'sent only when it changed; a change an operator makes in '
        'placement is seen at the next read. A failed write drops the '
        'copy. 0 reads the tree at every update.',
    ),
    cfg.IntOpt(
        'arq_binding_timeout',
        default=300,
        min=1,
        deprecated_group='DEFAULT',
        help='Seconds a build waits for accelerator-request-bound '
        'events before it fails (also read from [DEFAULT], '
        'where Nova has it).',
    ),
    cfg.IntOpt(
        'consecutive_build_service_disable_threshold',
        default=10,
        min=0,
        help='Disable this compute service after this many builds '
        'in a row failed on it (the reason shows in GET '
        '/os-services); 0 never disables. A build refused by '
        'the late server group check is not a failure. A '
        'success resets the count; re-enabling is the '
        "operator's call.",
    ),
    cfg.IntOpt(
        'build_workers',
        default=8,
        min=1,
        help='Builds run concurrently on one compute.',
    ),
    cfg.StrOpt(
        'host_ip',
        default='127.0.0.1',
        help='IP address of this host (SimpleCIDRAffinityFilter).',
    ),
]

ACCELERATOR_OPTS = [
    cfg.BoolOpt(
        'reschedule_on_bind_failure',
        default=True,
        help='A build whose accelerator requests fail to bind (or '
        'time out) is rescheduled to the next alternate host '
        'with new ARQs. Off: the server goes to ERROR, as in '
        'Nova.',
    )
]

FAKE_DRIVER_OPTS = [
    cfg.FloatOpt(
        'live_migration_seconds',
        default=2.0,
        min=0.0,
        help='How long the simulated memory (and, for a block migration, '
        'disk) copy of a live migration takes on its source; its progress '
        '(memory_processed_bytes...) advances in steps of '
        'live_migration_step_seconds.',
    ),
    cfg.FloatOpt(
        'live_migration_step_seconds',
        default=0.5,
        min=0.01,
        help='Seconds between two progress updates of a simulated live '
        'migration (each one call to the cell conductor).',
    ),
    cfg.IntOpt('vcpus', default=32, min=1, help='CPUs of the simulated host.'),
    cfg.IntOpt(
        'memory_mb',
        default=131072,
        min=1,
        help='Memory of the simulated host, in MB.',
    ),
    cfg.IntOpt(
        'disk_gb',
        default=2000,
        min=1,
        help='Local disk of the simulated host, in GB.',
    ),
    cfg.IntOpt(
        'vcpus_max',
        default=None,
        min=1,
        help='When set (and above vcpus): each simulated host gets '
        'a number of CPUs between vcpus and this, drawn from '
        'spread_seed and its host name, so the hosts of '
        'nimbus-compute --simulated-hosts differ.',
    ),
    cfg.IntOpt(
        'memory_mb_max',
        default=None,
        min=1,
        help='As vcpus_max, for memory_mb (rounded to 1024 MB).',
    ),
    cfg.IntOpt(
        'disk_gb_max', default=None, min=1, help='As vcpus_max, for disk_gb.'
    ),
    cfg.IntOpt(
        'spread_seed',
        default=0,
        help='Seed of the per-host sizes drawn from the *_max '
        'options: the same seed gives every host the same size '
        'on every start.',
    ),
    cfg.StrOpt(
        'hypervisor_type',
        default='QEMU',
        help='Hypervisor type the host reports (filters and '
        'weighers read it).',
    ),
    cfg.IntOpt(
        'hypervisor_version',
        default=8002000,
        help='Hypervisor version the host reports, as an integer '
        '(8.2.0 is 8002000).',
    ),
    cfg.ListOpt(
        'cpu_features',
        default=['avx2', 'sse4_2', 'aes'],
        help="CPU flags in the host's cpu_info (matched by "
        'capabilities:cpu_info:features extra specs).',
    ),
    cfg.ListOpt(
        'traits', default=[], help='Extra traits the root provider reports.'
    ),
    cfg.IntOpt(
        'numa_cells',
        default=2,
        min=1,
        help='Host NUMA cells (CPUs and memory split evenly).',
    ),
    cfg.FloatOpt(
        'spawn_seconds',
        default=0.0,
        min=0.0,
        mutable=True,
        help='How long a simulated spawn takes (mutable: SIGHUP '
        'to the compute applies a new value to the spawns that start '
        'after it).',
    ),
    cfg.BoolOpt(
        'fail_builds',
        default=False,
        help='Every spawn on this host fails (for tests and demos).',
    ),
    cfg.IntOpt(
        'pgpus',
        default=0,
        min=0,
        help='Physical GPUs modelled as child providers with '
        'CUSTOM_PGPU inventory.',
    ),
    cfg.DictOpt(
        'stats',
        default={},
        help='Free-form host stats the compute node reports, as '
        'key:value pairs (e.g. "rack:r1,gpu_vendor:acme"). '
        'ComputeCapabilitiesFilter matches unscoped flavor '
        'extra specs against them (extra spec "rack" with '
        'value "s== r1").',
    ),
]


# register_opts and list_opts: the pair each option module has (the
# services and oslo-config-generator call them); alike by design.
def register_opts(conf):
    conf.register_opts(COMPUTE_OPTS, group='compute')
    conf.register_opts(FAKE_DRIVER_OPTS, group='fake_driver')
    simulated.register_opts(conf)
    conf.register_opts(ACCELERATOR_OPTS, group='accelerator')


def list_opts():
    return [
        ('compute', COMPUTE_OPTS),
        ('fake_driver', FAKE_DRIVER_OPTS),
        ('accelerator', ACCELERATOR_OPTS),
    ] + simulated.list_opts()
