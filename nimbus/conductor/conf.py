"""Options of nimbus-conductor."""

from oslo_config import cfg

CONDUCTOR_OPTS = [
    cfg.IntOpt('workers', default=8, min=1,
               help='Threads that run schedule-and-build requests.'),
]


def register_opts(conf):
    conf.register_opts(CONDUCTOR_OPTS, group='conductor')


def list_opts():
    return [('conductor', CONDUCTOR_OPTS)]
