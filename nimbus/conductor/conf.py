"""Options of nimbus-conductor."""

from oslo_config import cfg

CONDUCTOR_OPTS = [
    cfg.IntOpt('workers', default=8, min=1,
               help='Threads that run schedule-and-build requests.'),
    cfg.IntOpt('build_check_interval', default=60, min=0,
               help='Seconds between a cell conductor\'s checks of the '
                    'instances in BUILD in its cell. An instance whose '
                    'compute service is down (no heartbeat for '
                    '[DEFAULT] service_down_time seconds, or forced down), '
                    'or whose build exceeded instance_build_timeout, goes '
                    'to ERROR with a fault and its allocation is freed. '
                    '0 disables the check: such a build then waits for its '
                    'compute to restart.'),
    cfg.IntOpt('instance_build_timeout', default=0, min=0,
               help='Seconds an instance may stay in BUILD after it was '
                    'created in its cell (reschedules included) before the '
                    'build check fails it, even with its compute up. 0 '
                    'means no limit (Nova\'s [DEFAULT] '
                    'instance_build_timeout has the same meaning).'),
]


def register_opts(conf):
    conf.register_opts(CONDUCTOR_OPTS, group='conductor')


def list_opts():
    return [('conductor', CONDUCTOR_OPTS)]
