"""Options of nimbus-conductor."""

from oslo_config import cfg

CONDUCTOR_OPTS = [
    cfg.IntOpt(
        'workers',
        default=8,
        min=1,
        help='Threads that run schedule-and-build requests.',
    ),
    cfg.IntOpt(
        'build_check_interval',
        default=60,
        min=0,
        help="Seconds between a cell conductor's checks of the "
        'instances in BUILD in its cell. An instance whose '
        'compute service is down (no heartbeat for '
        '[DEFAULT] service_down_time seconds, or forced down), '
        'or whose build exceeded instance_build_timeout, goes '
        'to ERROR with a fault and its allocation is freed. '
        '0 disables the check: such a build then waits for its '
        'compute to restart.',
    ),
    cfg.IntOpt(
        'instance_build_timeout',
        default=0,
        min=0,
        help='Seconds an instance may stay in BUILD after it was '
        'created in its cell (reschedules included) before the '
        'build check fails it, even with its compute up. 0 '
        "means no limit (Nova's [DEFAULT] "
        'instance_build_timeout has the same meaning).',
    ),
    cfg.IntOpt(
        'build_stall_timeout',
        default=600,
        min=0,
        help='Seconds an instance may wait in BUILD on a live compute '
        'that has not started it (its task state is not yet '
        'spawning, and the instance has not changed) before the '
        'build check moves it to its next stored alternate, or '
        'fails it with a fault and frees its allocation when none '
        'is left: its build message was lost (taken by a compute '
        'that died) or is stuck. A compute that takes the message '
        'later finds the instance on another host and does not '
        'build it. 0 disables it.',
    ),
    cfg.IntOpt(
        'build_request_timeout',
        default=300,
        min=10,
        help='Seconds a super conductor worker holds the schedule lease '
        'of a build request (it must exceed the longest schedule: two '
        'scheduler calls of [DEFAULT] rpc_response_timeout and the '
        'database writes). A build request whose lease is older, or '
        'that nobody leased that long after it was created (its '
        'message was lost with a killed conductor), is scheduled '
        'again by the recovery pass; the old worker, if it is still '
        'alive, then commits nothing.',
    ),
    cfg.IntOpt(
        'recovery_interval',
        default=60,
        min=0,
        help="Seconds between the super conductor's recovery passes "
        '(also run once at its start): build requests past '
        'build_request_timeout are scheduled again, and the safe '
        'kinds the consistency audit finds (orphan and leftover '
        'allocations, stale build requests, orphan ARQs) are '
        'repaired, each with one log line. 0 disables it (then '
        'nimbus-manage audit --heal is the only repair).',
    ),
    cfg.IntOpt(
        'audit_interval',
        default=600,
        min=0,
        help="Seconds between the super conductor's read-only "
        'consistency audits (the checks of nimbus-manage '
        'audit): each logs one line with the count of every '
        'kind of disagreement between cells, the API '
        'database, placement and the accelerator service. '
        '0 disables it.',
    ),
    cfg.IntOpt(
        'audit_stuck_after',
        default=3600,
        min=1,
        help='Seconds an instance may stay in BUILD, or in task '
        'state deleting, before the audit reports it stuck.',
    ),
    cfg.IntOpt(
        'audit_grace',
        default=300,
        min=0,
        help='Seconds the audit waits before it reports what a '
        'build or delete under way writes in two steps (a '
        'build request left beside its new instance, the '
        'allocation of a just-deleted instance, a mapping '
        'without a cell or build request).',
    ),
]


# register_opts and list_opts: the pair each option module has (the
# services and oslo-config-generator call them); alike by design.
def register_opts(conf):
    conf.register_opts(CONDUCTOR_OPTS, group='conductor')


def list_opts():
    return [('conductor', CONDUCTOR_OPTS)]
