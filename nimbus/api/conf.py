"""Options of nimbus-api (group ``[api]``; auth_strategy lives in
:mod:`nimbus.common.wsgi.options`)."""

from oslo_config import cfg

API_OPTS = [
    cfg.IntOpt(
        'max_limit',
        default=1000,
        min=1,
        help='Largest number of items one list request returns.',
    ),
    cfg.StrOpt(
        'default_schedule_zone',
        help='Availability zone given to servers created without '
        'one. Unset means any zone.',
    ),
    cfg.StrOpt(
        'internal_service_availability_zone',
        default='internal',
        help='Availability zone shown for non-compute services.',
    ),
    cfg.BoolOpt(
        'enable_instance_password',
        default=True,
        help='Return an adminPass when a server is created.',
    ),
    cfg.IntOpt(
        'max_instances_per_request',
        default=1000,
        min=1,
        help='Largest max_count (and min_count) one POST /servers '
        'may ask for; above it the request is refused with 400 '
        'before anything is stored. Every instance of a '
        'multi-create is a build request, a request spec and '
        'a scheduler selection, all made at once.',
    ),
    cfg.FloatOpt(
        'cell_timeout',
        default=10.0,
        min=0.1,
        help='Seconds a request waits for a cell database (listing '
        'servers, showing one). A cell that errors or does not answer '
        'in time is down for that request: lists answer with the '
        'other cells (from microversion 2.69 with minimal records of '
        "the down cell's servers, from the API database) and a "
        'show answers 503 (2.69: a minimal record).',
    ),
    cfg.StrOpt(
        'compute_link_prefix',
        help='Base URL put in links instead of the request host '
        '(for a proxy in front of nimbus-api).',
    ),
]

DASHBOARD_OPTS = [
    cfg.FloatOpt(
        'cache_ttl',
        default=2.0,
        min=0.0,
        help='Seconds the dashboard keeps its host and failed-build '
        'snapshots: every open page within that interval '
        'shares one read of the databases.',
    ),
    cfg.IntOpt(
        'max_streams',
        default=8,
        min=0,
        help='Dashboard event streams open at once per API process '
        '(each holds one API worker thread); one more is '
        'refused with 503.',
    ),
    cfg.IntOpt(
        'queue_size',
        default=100,
        min=1,
        help='Decisions a dashboard page may lag behind before its '
        'event stream is dropped (the page reconnects).',
    ),
    cfg.FloatOpt(
        'keepalive',
        default=15.0,
        min=0.1,
        help='Seconds between keep-alive comments on an idle event stream.',
    ),
    cfg.FloatOpt(
        'stream_lifetime',
        default=300.0,
        min=1.0,
        help='Seconds after which an event stream ends (the page '
        'reconnects), so that no worker thread is held '
        'forever.',
    ),
]


def _limit(name, default, what):
    """A quota limit option: -1 is unlimited."""
    return cfg.IntOpt(name, default=default, min=-1, help=what)


# Nova's [quota] options and defaults; -1 is unlimited. The quota class
# ``default`` (os-quota-class-sets) overrides them, a project's own limits
# (os-quota-sets) override both.
QUOTA_OPTS = [
    _limit('instances', 10, 'Servers a project may have.'),
    _limit('cores', 20, 'VCPUs of the servers of a project.'),
    _limit('ram', 51200, 'MiB of RAM of the servers of a project.'),
    _limit('metadata_items', 128, 'Metadata items of one server.'),
    _limit('injected_files', 5, 'Injected files of one server (below 2.57).'),
    _limit(
        'injected_file_content_bytes',
        10240,
        'Bytes of one injected file (below 2.57).',
    ),
    _limit(
        'injected_file_path_length',
        255,
        'Characters of one injected file path (below 2.57).',
    ),
    _limit('key_pairs', 100, 'Key pairs of one user.'),
    _limit('server_groups', 10, 'Server groups of a project.'),
    _limit('server_group_members', 10, 'Servers in one server group.'),
    cfg.BoolOpt(
        'count_usage_from_placement',
        default=False,
        help='Count the cores and RAM a project uses from '
        "placement's usages (GET /usages?project_id=) rather "
        'than from the flavors of its servers in the cell '
        'databases. Instances are counted from the instance '
        'mappings either way. Needs a placement endpoint.',
    ),
    cfg.BoolOpt(
        'recheck_quota',
        default=True,
        help='Count the usage again after a create has written its '
        'build requests, request specs and instance mappings, and '
        'refuse it (403, its records removed, nothing cast to the '
        'conductor) when the project is then over a limit. Without '
        'it, creates racing for the last headroom of a project can '
        'all be admitted.',
    ),
]


# register_opts and list_opts: the pair each option module has (the
# services and oslo-config-generator call them); alike by design.
def register_opts(conf):
    conf.register_opts(API_OPTS, group='api')
    conf.register_opts(DASHBOARD_OPTS, group='dashboard')
    conf.register_opts(QUOTA_OPTS, group='quota')
    # [oslo_policy] (policy_file, enforce_new_defaults, ...) is read when
    # the app starts; register it up front so config files and overrides
    # can set it. oslo-config-generator lists it under oslo.policy.
    from oslo_policy import opts as policy_opts

    for group, opts in policy_opts.list_opts():
        conf.register_opts(opts, group=group)


def list_opts():
    return [
        ('api', API_OPTS),
        ('dashboard', DASHBOARD_OPTS),
        ('quota', QUOTA_OPTS),
    ]
