"""Scheduler options: ``[filter_scheduler]``, ``[scheduler]``, ``[metrics]``, ``[pci]``.

Names and defaults follow Nova's. Config is always passed in (``register_opts(conf)``).
"""

from oslo_config import cfg

FILTER_SCHEDULER_OPTS = [
    cfg.IntOpt(
        'host_subset_size',
        default=1,
        help='Pick at random among this many best-weighed hosts; below 1 means 1.',
    ),
    cfg.IntOpt(
        'max_io_ops_per_host',
        default=8,
        min=0,
        help='IoOpsFilter: hosts with more concurrent I/O-heavy tasks are rejected.',
    ),
    cfg.IntOpt(
        'max_instances_per_host',
        default=50,
        min=1,
        help='NumInstancesFilter: hosts with this many instances are rejected.',
    ),
    cfg.BoolOpt(
        'track_instance_changes',
        default=True,
        help='Keep per-host instance lists up to date from compute events.',
    ),
    cfg.MultiStrOpt(
        'available_filters',
        default=['nimbus.scheduler.filters.all_filters'],
        help="Filters that may be enabled: 'nimbus.scheduler.filters.all_filters' "
        '(built-ins plus entry points) or dotted class paths.',
    ),
    cfg.ListOpt(
        'enabled_filters',
        default=[
            'ComputeFilter',
            'AvailabilityZoneFilter',
            'ComputeCapabilitiesFilter',
            'ImagePropertiesFilter',
            'ServerGroupAntiAffinityFilter',
            'ServerGroupAffinityFilter',
        ],
        help='Filters applied, in this order.',
    ),
    cfg.ListOpt(
        'weight_classes',
        default=['nimbus.scheduler.weighers.all_weighers'],
        help="Weighers used: 'nimbus.scheduler.weighers.all_weighers' or class paths "
        'or entry-point names.',
    ),
    cfg.FloatOpt(
        'ram_weight_multiplier',
        default=1.0,
        help='RAMWeigher: multiplier of the normalised free RAM. Positive spreads '
        'instances over hosts (most free RAM wins); negative stacks them (least '
        'free RAM wins); the absolute value sets its strength against the other '
        "weighers. Aggregate metadata 'ram_weight_multiplier' overrides it for "
        "the aggregate's hosts (the minimum wins when several aggregates set "
        'it).',
    ),
    cfg.FloatOpt(
        'cpu_weight_multiplier',
        default=1.0,
        help='CPUWeigher: multiplier of the normalised free vCPUs (capacity times '
        'allocation ratio, minus usage). Positive spreads, negative stacks. '
        "Aggregate metadata 'cpu_weight_multiplier' overrides it (minimum wins).",
    ),
    cfg.FloatOpt(
        'disk_weight_multiplier',
        default=1.0,
        help='DiskWeigher: multiplier of the normalised free disk. Positive spreads, '
        "negative stacks. Aggregate metadata 'disk_weight_multiplier' overrides "
        'it (minimum wins).',
    ),
    cfg.FloatOpt(
        'io_ops_weight_multiplier',
        default=-1.0,
        help='IoOpsWeigher: multiplier of the normalised number of I/O-heavy tasks '
        '(builds, resizes, snapshots) running on a host. Negative (the default) '
        'prefers quiet hosts; positive prefers busy ones. Aggregate metadata '
        "'io_ops_weight_multiplier' overrides it (minimum wins).",
    ),
    cfg.FloatOpt(
        'pci_weight_multiplier',
        default=1.0,
        min=0.0,
        help='PCIWeigher: multiplier for matching PCI-device-rich hosts to PCI '
        'requests and keeping other instances off them. Must not be negative. '
        "Aggregate metadata 'pci_weight_multiplier' overrides it (minimum wins).",
    ),
    cfg.FloatOpt(
        'soft_affinity_weight_multiplier',
        default=1.0,
        min=0.0,
        help='ServerGroupSoftAffinityWeigher: multiplier of the normalised number of '
        "the request's server-group members already on a host (soft-affinity "
        'groups). Must not be negative. Aggregate metadata '
        "'soft_affinity_weight_multiplier' overrides it (minimum wins).",
    ),
    cfg.FloatOpt(
        'soft_anti_affinity_weight_multiplier',
        default=1.0,
        min=0.0,
        help='ServerGroupSoftAntiAffinityWeigher: multiplier of the normalised '
        "negated number of the group's members on a host (soft-anti-affinity "
        'groups). Must not be negative. Aggregate metadata '
        "'soft_anti_affinity_weight_multiplier' overrides it (minimum wins).",
    ),
    cfg.FloatOpt(
        'build_failure_weight_multiplier',
        default=1000000.0,
        help='BuildFailureWeigher: multiplier of the normalised count of recent '
        'failed builds on a host (the raw value is negated, so failing hosts '
        'sink). The large default keeps a failing host last without taking it '
        'out of rotation; 0 disables the weigher. Aggregate metadata '
        "'build_failure_weight_multiplier' overrides it (minimum wins).",
    ),
    cfg.FloatOpt(
        'cross_cell_move_weight_multiplier',
        default=1000000.0,
        help='CrossCellWeigher: during a move, multiplier that prefers hosts in the '
        "instance's current cell (positive) or in other cells (negative). Has "
        'nothing to do for new builds. Aggregate metadata '
        "'cross_cell_move_weight_multiplier' overrides it (minimum wins).",
    ),
    cfg.FloatOpt(
        'num_instances_weight_multiplier',
        default=0.0,
        help='NumInstancesWeigher: multiplier of the normalised number of instances '
        'on a host. Positive packs hosts with many instances, negative prefers '
        'hosts with few; 0 (the default) disables the weigher. Aggregate '
        "metadata 'num_instances_weight_multiplier' overrides it (minimum wins).",
    ),
    cfg.FloatOpt(
        'hypervisor_version_weight_multiplier',
        default=1.0,
        help='HypervisorVersionWeigher: multiplier of the normalised hypervisor '
        'version. Positive prefers newer hypervisors, negative older ones. '
        "Aggregate metadata 'hypervisor_version_weight_multiplier' overrides it "
        '(minimum wins).',
    ),
    cfg.FloatOpt(
        'image_props_weight_multiplier',
        default=0.0,
        help='ImagePropertiesWeigher: multiplier of how many instances on a host '
        "share the requested image's properties (see "
        'image_props_weight_setting). Positive packs alike instances, negative '
        'spreads them; 0 (the default) disables the weigher. Aggregate metadata '
        "'image_props_weight_multiplier' overrides it (minimum wins).",
    ),
    cfg.DictOpt(
        'image_props_weight_setting',
        default={},
        help='Per-property ratio for ImagePropertiesWeigher, e.g. os_distro:10',
    ),
    cfg.BoolOpt(
        'shuffle_best_same_weighed_hosts',
        default=False,
        help='Shuffle the hosts that share the best weight before picking, so that '
        'several schedulers (or requests) with identical views do not all pick '
        'the first of them. Useful when many hosts are identical; costs nothing '
        'otherwise.',
    ),
    cfg.IntOpt(
        'hosts_to_score_percentage',
        default=100,
        min=1,
        max=100,
        help='Sampling, off by default (100: every candidate is filtered and '
        'weighed). Below 100, a decision runs the filters over the candidates '
        'in windows, starting where the previous decision stopped, only until '
        'this percentage of the candidates (at least min_hosts_to_score, and '
        'at least one per instance requested) has passed, and weighs only '
        'those. It trades placement quality (the best host may be among the '
        'candidates left unexamined, so packing and spread get worse) for '
        'decision time at large host counts; racing decisions look at '
        'different hosts. A request the sample cannot fully place is decided '
        'again over every candidate, so sampling never rejects a request the '
        "full scan would place. Like the Kubernetes scheduler's "
        'percentageOfNodesToScore.',
    ),
    cfg.IntOpt(
        'min_hosts_to_score',
        default=100,
        min=1,
        help='With hosts_to_score_percentage below 100: a decision examines '
        'candidates until at least this many passed the filters (or every '
        'candidate was examined). A request with no more candidates than '
        'this is not sampled.',
    ),
    cfg.ListOpt(
        'isolated_images',
        default=[],
        help='IsolatedHostsFilter: image ids that may only run on isolated_hosts.',
    ),
    cfg.ListOpt(
        'isolated_hosts',
        default=[],
        help='IsolatedHostsFilter: host names reserved for isolated_images.',
    ),
    cfg.BoolOpt(
        'restrict_isolated_hosts_to_isolated_images',
        default=True,
        help='IsolatedHostsFilter: when true, isolated_hosts run only '
        'isolated_images; when false, they may also run other images (isolated '
        'images still run only on isolated hosts).',
    ),
    cfg.StrOpt(
        'aggregate_image_properties_isolation_namespace',
        help='AggregateImagePropertiesIsolation: only image properties and aggregate '
        "metadata keys in this namespace (e.g. 'os' for 'os.distro') are "
        'compared. Unset compares every key.',
    ),
    cfg.StrOpt(
        'aggregate_image_properties_isolation_separator',
        default='.',
        help='AggregateImagePropertiesIsolation: separator between the namespace and '
        'the key.',
    ),
]

SCHEDULER_OPTS = [
    cfg.IntOpt(
        'max_attempts',
        default=3,
        min=1,
        help='Selected host plus alternates returned per instance.',
    ),
    cfg.IntOpt(
        'max_placement_results',
        default=1000,
        min=1,
        help='limit= on GET /allocation_candidates.',
    ),
    cfg.IntOpt(
        'host_state_refresh_interval',
        default=10,
        min=1,
        help='Seconds between reloads of the compute services (up, down, '
        'disabled) from the cell databases. Cells never call the '
        'scheduler, so this is how it learns that a compute went '
        'down. One small query per cell.',
    ),
    cfg.IntOpt(
        'host_state_full_refresh_interval',
        default=60,
        min=1,
        help='Seconds between full reloads of compute nodes, services, '
        'aggregates, instances and server groups from the databases '
        '(about 0.2 s per 1000 hosts on SQLite). Between reloads, '
        "events from the API-level services and placement's answers "
        'keep the cache current, and a provider placement returns '
        'that the cache does not know triggers a reload at once.',
    ),
    cfg.IntOpt(
        'workers',
        min=0,
        help="Accepted for compatibility with Nova's option and not used: one "
        'nimbus-scheduler daemon is one process. Run several daemons (on one '
        'machine or many) for active/active scheduling; placement claims '
        'arbitrate between them.',
    ),
    cfg.BoolOpt(
        'query_placement_for_image_type_support',
        default=False,
        help='Request filter: ask placement only for compute nodes that report the '
        'COMPUTE_IMAGE_TYPE_<disk_format> trait of the requested image.',
    ),
    cfg.BoolOpt(
        'limit_tenants_to_placement_aggregate',
        default=False,
        help="Request filter: projects named in aggregate metadata 'filter_tenant_id'"
        " (or 'filter_tenant_id<suffix>') are limited to those aggregates' hosts"
        ' (member_of in the placement query).',
    ),
    cfg.BoolOpt(
        'placement_aggregate_required_for_tenants',
        default=False,
        help='With limit_tenants_to_placement_aggregate: a project that no aggregate '
        'names gets no host at all (instead of any host).',
    ),
    cfg.BoolOpt(
        'query_placement_for_availability_zone',
        default=True,
        help='Request filter: turn the requested availability zone into '
        "member_of=in:<the aggregates whose 'availability_zone' metadata names "
        "it>, so placement returns only that zone's hosts. The compute API "
        'mirrors aggregate membership into placement for this. '
        'AvailabilityZoneFilter does the same check in the scheduler.',
    ),
    cfg.BoolOpt(
        'enable_isolated_aggregate_filtering',
        default=False,
        help='Request filter: keep requests away from aggregates whose '
        "'trait:<TRAIT>=required' metadata the flavor and image do not ask for "
        '(member_of=!in: in the placement query).',
    ),
    cfg.StrOpt(
        'default_availability_zone',
        default='nova',
        deprecated_opts=[
            cfg.DeprecatedOpt('default_availability_zone', group='api')
        ],
        help='Zone of hosts that are in no aggregate with availability_zone '
        'metadata. The scheduler applies it, and the compute API shows it '
        '(os-services, os-availability-zone) and accepts it in POST '
        '/servers. Formerly [api] default_availability_zone, which is still '
        'read when this one is not set.',
    ),
    cfg.IntOpt(
        'explain_sample_size',
        default=10,
        min=0,
        help='Rejected hosts listed (with a reason) in a failure explanation.',
    ),
    cfg.IntOpt(
        'decision_backlog',
        default=1000,
        min=0,
        help='Most decision notifications left waiting on RabbitMQ while '
        'no tail consumes them. RabbitMQ holds the bound with a max-length '
        'policy on the notifications.info and notifications.error queues '
        "(the install guide's rabbitmqctl set_policy step; oslo.messaging "
        'declares those queues with no bound). Every minute the scheduler '
        'reads their depth and, when one holds more than this many, logs a '
        'warning with the rabbitmqctl command that bounds it. 0: no check. '
        'The in-process bus keeps 1000 by itself.',
    ),
    cfg.IntOpt(
        'executor_thread_pool_size',
        default=8,
        min=1,
        help="Threads of the scheduler's RPC server; it takes the place of "
        '[DEFAULT] executor_thread_pool_size (64) for this daemon. Decisions '
        'run one at a time in a process (they share its host states) and '
        'cache events never wait for one, so more threads only wait on that '
        'lock; oslo.messaging hands messages to every thread of its pool in '
        'turn, and each keeps its own stack and malloc arena warm.',
    ),
    cfg.BoolOpt(
        'emit_decisions',
        default=True,
        help='Emit a scheduler.select_destinations.decision notification '
        "(topic 'notifications' of the scheduler's bus) per decision: "
        'the decision stream `nimbus decisions --follow` tails.',
    ),
]

METRICS_OPTS = [
    cfg.FloatOpt(
        'weight_multiplier',
        default=1.0,
        help='MetricsWeigher: multiplier of the normalised weighted sum of the '
        'metrics named in weight_setting. Aggregate metadata '
        "'metrics_weight_multiplier' overrides it (minimum wins).",
    ),
    cfg.ListOpt(
        'weight_setting',
        default=[],
        help='name=ratio pairs, e.g. cpu.frequency=1.0, cpu.user.percent=-1.0',
    ),
    cfg.BoolOpt(
        'required',
        default=True,
        help='How MetricsWeigher treats a host that lacks one of the weight_setting '
        'metrics. True: the host cannot be weighed, so it is rejected (with '
        'the missing metric as the reason in explain and dry run; Nova raises '
        'instead). False: the host gets weight_of_unavailable.',
    ),
    cfg.FloatOpt(
        'weight_of_unavailable',
        default=-10000.0,
        help='MetricsWeigher: the raw value given to a host that lacks one of the '
        "weight_setting metrics when 'required' is false; a large negative "
        'value sinks it.',
    ),
]

PCI_OPTS = [
    cfg.MultiStrOpt(
        'alias',
        default=[],
        help='JSON: {"name": "a1", "vendor_id": "8086", "product_id": "154d", '
        '"device_type": "type-PCI"}',
    )
]

GROUPS = (
    ('filter_scheduler', FILTER_SCHEDULER_OPTS),
    ('scheduler', SCHEDULER_OPTS),
    ('metrics', METRICS_OPTS),
    ('pci', PCI_OPTS),
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    for group, opts in GROUPS:
        conf.register_opts(opts, group=group)


def list_opts():
    return [(group, list(opts)) for group, opts in GROUPS]


def make_conf(args=None, **overrides) -> cfg.ConfigOpts:
    """A private ConfigOpts with scheduler options; overrides as {'group.name': value}."""
    conf = cfg.ConfigOpts()
    register_opts(conf)
    conf(args or [], project='nimbus', default_config_files=[])
    for key, value in overrides.items():
        group, name = key.split('.', 1)
        conf.set_override(name, value, group=group)
    return conf
