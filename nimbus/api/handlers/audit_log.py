"""/os-instance_usage_audit_log: the state of the instance usage audit of
the computes for a period (the last whole month before a time).

Nimbus computes do not run Nova's periodic usage audit (there is no
``task_log`` to read), so every compute host is listed as not run for the
period. The shape is Nova's; the counts tell the truth about that.
"""

import datetime

from nimbus.api import policies
from nimbus.api import util
from nimbus.api.objects import services as service_obj

FORMATS = (
    '%Y-%m-%d %H:%M:%S.%f',
    '%Y-%m-%d %H:%M:%S',
    '%Y-%m-%dT%H:%M:%S',
    '%Y-%m-%dT%H:%M:%S.%f',
    '%Y-%m-%d',
)


def _parse(value):
    for fmt in FORMATS:
        try:
            return datetime.datetime.strptime(value, fmt)
        except ValueError:
            continue
    raise util.bad_request('Invalid timestamp for date %s' % value)


def last_period(before):
    """The last whole calendar month that ended at or before ``before``."""
    end = before.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    start = (end - datetime.timedelta(days=1)).replace(day=1)
    return start, end


def _log(req, before):
    deps = util.deps(req)
    start, end = last_period(before)
    hosts = sorted(
        s['host']
        for s in service_obj.list_services(
            deps.cells, deps.conf.service_down_time, util.utcnow()
        )
        if s['binary'].endswith('compute')
    )
    return {
        'hosts_not_run': hosts,
        'log': {},
        'num_hosts': len(hosts),
        'num_hosts_done': 0,
        'num_hosts_not_run': len(hosts),
        'num_hosts_running': 0,
        'overall_status': '0 of %d hosts done. 0 errors.' % len(hosts),
        'period_beginning': str(start),
        'period_ending': str(end),
        'total_errors': 0,
        'total_instances': 0,
    }


def index(req, resp):
    util.authorize(req, policies.AUDIT_LOG % 'list')
    resp.media = {'instance_usage_audit_logs': _log(req, util.utcnow())}


def show(req, resp, before_timestamp):
    util.authorize(req, policies.AUDIT_LOG % 'show')
    resp.media = {
        'instance_usage_audit_log': _log(req, _parse(before_timestamp))
    }
