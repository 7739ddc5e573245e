"""Scheduler options: ``[filter_scheduler]``, ``[scheduler]``, ``[metrics]``, ``[pci]``.

Names and defaults follow Nova's. Config is always passed in (``register_opts(conf)``).
"""

from oslo_config import cfg

FILTER_SCHEDULER_OPTS = [
    cfg.IntOpt("host_subset_size", default=1,
               help="Pick at random among this many best-weighed hosts; below 1 means 1."),
    cfg.IntOpt("max_io_ops_per_host", default=8, min=0,
               help="IoOpsFilter: hosts with more concurrent I/O-heavy tasks are rejected."),
    cfg.IntOpt("max_instances_per_host", default=50, min=1,
               help="NumInstancesFilter: hosts with this many instances are rejected."),
    cfg.BoolOpt("track_instance_changes", default=True,
                help="Keep per-host instance lists up to date from compute events."),
    cfg.MultiStrOpt("available_filters", default=["nimbus.scheduler.filters.all_filters"],
                    help="Filters that may be enabled: 'nimbus.scheduler.filters.all_filters' "
                         "(built-ins plus entry points) or dotted class paths."),
    cfg.ListOpt("enabled_filters",
                default=["ComputeFilter", "AvailabilityZoneFilter",
                         "ComputeCapabilitiesFilter", "ImagePropertiesFilter",
                         "ServerGroupAntiAffinityFilter", "ServerGroupAffinityFilter"],
                help="Filters applied, in this order."),
    cfg.ListOpt("weight_classes", default=["nimbus.scheduler.weighers.all_weighers"],
                help="Weighers used: 'nimbus.scheduler.weighers.all_weighers' or class paths "
                     "or entry-point names."),
    cfg.FloatOpt("ram_weight_multiplier", default=1.0),
    cfg.FloatOpt("cpu_weight_multiplier", default=1.0),
    cfg.FloatOpt("disk_weight_multiplier", default=1.0),
    cfg.FloatOpt("io_ops_weight_multiplier", default=-1.0),
    cfg.FloatOpt("pci_weight_multiplier", default=1.0, min=0.0),
    cfg.FloatOpt("soft_affinity_weight_multiplier", default=1.0, min=0.0),
    cfg.FloatOpt("soft_anti_affinity_weight_multiplier", default=1.0, min=0.0),
    cfg.FloatOpt("build_failure_weight_multiplier", default=1000000.0),
    cfg.FloatOpt("cross_cell_move_weight_multiplier", default=1000000.0),
    cfg.FloatOpt("num_instances_weight_multiplier", default=0.0),
    cfg.FloatOpt("hypervisor_version_weight_multiplier", default=1.0),
    cfg.FloatOpt("image_props_weight_multiplier", default=0.0),
    cfg.DictOpt("image_props_weight_setting", default={},
                help="Per-property ratio for ImagePropertiesWeigher, e.g. os_distro:10"),
    cfg.BoolOpt("shuffle_best_same_weighed_hosts", default=False),
    cfg.ListOpt("isolated_images", default=[]),
    cfg.ListOpt("isolated_hosts", default=[]),
    cfg.BoolOpt("restrict_isolated_hosts_to_isolated_images", default=True),
    cfg.StrOpt("aggregate_image_properties_isolation_namespace"),
    cfg.StrOpt("aggregate_image_properties_isolation_separator", default="."),
]

SCHEDULER_OPTS = [
    cfg.IntOpt("max_attempts", default=3, min=1,
               help="Selected host plus alternates returned per instance."),
    cfg.IntOpt("max_placement_results", default=1000, min=1,
               help="limit= on GET /allocation_candidates."),
    cfg.IntOpt("host_state_refresh_interval", default=10, min=1,
               help="Seconds between reloads of compute nodes, services, "
                    "aggregates and instances from the databases. Cells never "
                    "call the scheduler, so this is how it learns that a "
                    "compute went down or came up; between reloads the cache "
                    "is kept current by events and placement's answers."),
    cfg.IntOpt("workers", min=0),
    cfg.BoolOpt("query_placement_for_image_type_support", default=False),
    cfg.BoolOpt("limit_tenants_to_placement_aggregate", default=False),
    cfg.BoolOpt("placement_aggregate_required_for_tenants", default=False),
    cfg.BoolOpt("query_placement_for_availability_zone", default=True),
    cfg.BoolOpt("enable_isolated_aggregate_filtering", default=False),
    cfg.StrOpt("default_availability_zone", default="nova",
               help="Zone of hosts that are in no aggregate with availability_zone metadata."),
    cfg.IntOpt("explain_sample_size", default=10, min=0,
               help="Rejected hosts listed (with a reason) in a failure explanation."),
]

METRICS_OPTS = [
    cfg.FloatOpt("weight_multiplier", default=1.0),
    cfg.ListOpt("weight_setting", default=[],
                help="name=ratio pairs, e.g. cpu.frequency=1.0, cpu.user.percent=-1.0"),
    cfg.BoolOpt("required", default=True,
                help="True: a host missing a metric is rejected by MetricsFilter / weighed "
                     "by weight_of_unavailable. False: the metric counts as 0."),
    cfg.FloatOpt("weight_of_unavailable", default=-10000.0),
]

PCI_OPTS = [
    cfg.MultiStrOpt("alias", default=[],
                    help='JSON: {"name": "a1", "vendor_id": "8086", "product_id": "154d", '
                         '"device_type": "type-PCI"}'),
]

GROUPS = (("filter_scheduler", FILTER_SCHEDULER_OPTS), ("scheduler", SCHEDULER_OPTS),
          ("metrics", METRICS_OPTS), ("pci", PCI_OPTS))


def register_opts(conf: cfg.ConfigOpts) -> None:
    for group, opts in GROUPS:
        conf.register_opts(opts, group=group)


def list_opts():
    return [(group, list(opts)) for group, opts in GROUPS]


def make_conf(args=None, **overrides) -> cfg.ConfigOpts:
    """A private ConfigOpts with scheduler options; overrides as {'group.name': value}."""
    conf = cfg.ConfigOpts()
    register_opts(conf)
    conf(args or [], project="nimbus", default_config_files=[])
    for key, value in overrides.items():
        group, name = key.split(".", 1)
        conf.set_override(name, value, group=group)
    return conf
