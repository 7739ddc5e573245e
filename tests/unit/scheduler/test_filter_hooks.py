"""The filter hooks, counted: a filter with nothing to do for the request is never
called; a once-per-request filter runs once per request, also in a multi-create; a
per-instance filter re-checks only the host that took the previous instance; a filter
that depends on the request's progress re-runs over every candidate."""

import collections

from nimbus.scheduler import selection, testing
from nimbus.scheduler.filters import BaseHostFilter

from .conftest import host


class Counting(BaseHostFilter):
    def __init__(self, name, enabled=True, once=False, progressive=False):
        super().__init__(None)
        self._name = name
        self.enabled = enabled
        self.run_filter_once_per_request = once
        self.depends_on_request_progress = progressive
        self.calls = collections.Counter()
        self.checked = []

    @property
    def name(self):
        return self._name

    def is_enabled_for(self, spec):
        self.calls['is_enabled_for'] += 1
        return self.enabled

    def host_passes(self, host_state, spec):
        self.calls['host_passes'] += 1
        self.checked.append(host_state.host)
        return True

    def filter_all(self, hosts, spec):
        self.calls['filter_all'] += 1
        return [h for h in hosts if self.host_passes(h, spec)]

    def reject_reason(self, host_state, spec):
        self.calls['reject_reason'] += 1
        return 'counted'


def _run(conf, num, *filters):
    hosts = [host(f'h{i}', vcpus=8 + i) for i in range(6)]
    sched = selection.FilterScheduler(conf, filters=list(filters))
    res = sched.schedule(
        testing.spec(vcpus=1, memory_mb=512, root_gb=1, num=num), hosts
    )
    return res, sched


def test_skipped_filter_is_never_called(conf):
    skipped = Counting('Skipped', enabled=False)
    res, sched = _run(conf, 5, skipped)
    assert len(res) == 5
    assert set(skipped.calls) == {'is_enabled_for'}  # asked, nothing else
    # the dry run and the explanation do not call it either
    out = sched.dry_run(testing.spec(vcpus=1), [host('x')])
    assert set(skipped.calls) == {'is_enabled_for'}
    assert [f['name'] for f in out['filters']] == []


def test_once_per_request_filter_runs_once_per_request(conf):
    once = Counting('Once', once=True)
    res, _sched = _run(conf, 8, once)
    assert len(res) == 8
    assert once.calls['filter_all'] == 1
    assert once.calls['host_passes'] == 6  # the six hosts, once each
    res, _sched = _run(conf, 3, once)
    assert once.calls['filter_all'] == 2  # a second request: once more


def test_per_instance_filter_rechecks_only_the_chosen_host(conf):
    each = Counting('Each')
    res, _sched = _run(conf, 4, each)
    chosen = [r[0].service_host for r in res]
    assert each.calls['filter_all'] == 1
    # 6 hosts for the first instance, then the host that took instances 1..3
    assert each.checked[:6] == [f'h{i}' for i in range(6)]
    assert each.checked[6:] == chosen[:3]


def test_progressive_filter_reruns_over_all_candidates(conf):
    prog = Counting('Progressive', progressive=True)
    res, _sched = _run(conf, 3, prog)
    assert len(res) == 3
    assert (
        prog.calls['filter_all'] == 3
    )  # first pass, then after instances 1, 2
    assert prog.calls['host_passes'] == 18
