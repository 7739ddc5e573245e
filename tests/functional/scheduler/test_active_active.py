"""Three scheduler processes, active/active, against one real placement:
100 concurrent requests on 20 hosts never overcommit a provider, and every
request either lands (with its allocation in placement) or fails with a
reason. Placement's claims are the only arbiter between the processes."""

import json
import os
import subprocess
import sys
import uuid

import pytest

from nimbus.allinone.cloud import wait_for
from tests.functional.scheduler import fixtures as fx

HOSTS = 20
VCPUS = 4  # per host, allocation ratio 1.0: 80 one-VCPU servers fit
REQUESTS = 100
PROCESSES = 3


def _spec(instance_uuid):
    return {
        'instance_uuids': [instance_uuid],
        'num_instances': 1,
        'min_count': 1,
        'project_id': 'p',
        'user_id': 'u',
        'flavor': {
            'name': 'one',
            'flavorid': '1',
            'vcpus': 1,
            'memory_mb': 256,
            'root_gb': 1,
            'ephemeral_gb': 0,
            'swap': 0,
            'extra_specs': {},
        },
        'image': None,
        'scheduler_hints': {},
        'request_id': 'req-%s' % instance_uuid,
    }


@pytest.mark.slow
def test_three_schedulers_never_overcommit(make_cloud, tmp_path):
    cloud = make_cloud(
        hosts=HOSTS,
        overrides={
            'fake_driver': {'vcpus': VCPUS},
            'compute': {'initial_cpu_allocation_ratio': 1.0},
            # The workers claim for consumers the cloud has no build
            # request for: to its recovery pass (at the start and every
            # minute) they are orphan allocations, and it heals them
            # (deletes them), which a slow run saw before the checks below.
            'conductor': {'recovery_interval': 0},
        },
    )
    wait_for(
        lambda: len(fx.provider_usages(cloud)) == HOSTS,
        timeout=30,
        what='every compute in placement',
    )
    conf_path = tmp_path / 'conf.json'
    overrides = cloud._overrides()
    # The worker processes log to files of their own, not to the test's.
    overrides['DEFAULT'].pop('host', None)
    conf_path.write_text(json.dumps(overrides))
    uuids = [str(uuid.uuid4()) for _ in range(REQUESTS)]
    go = tmp_path / 'go'
    procs, outs = [], []
    for n in range(PROCESSES):
        mine = [_spec(u) for u in uuids[n::PROCESSES]]
        req_path = tmp_path / ('requests-%d.json' % n)
        req_path.write_text(json.dumps(mine))
        out = tmp_path / ('out-%d.json' % n)
        outs.append(out)
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    '-m',
                    'tests.functional.scheduler.sched_worker',
                    str(conf_path),
                    str(req_path),
                    str(go),
                    str(out),
                ],
                cwd=os.getcwd(),
                stdout=subprocess.DEVNULL,
                stderr=open(tmp_path / ('err-%d.log' % n), 'w'),
            )
        )
    try:
        wait_for(
            lambda: all(os.path.exists(str(o) + '.ready') for o in outs),
            timeout=120,
            what='scheduler processes to load their host states',
        )
        go.write_text('go')
        for proc in procs:
            assert proc.wait(timeout=300) == 0, (
                tmp_path / 'err-0.log'
            ).read_text()[-3000:]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    results, refused, kinds = {}, 0, set()
    for out in outs:
        results.update(json.loads(out.read_text()))
        refused += results.pop('_refused_claims')
        kinds.update(results.pop('_refused_kinds'))
    # Placement did arbitrate: the processes raced for the same hosts and some
    # claims were refused (capacity gone), each then moving on to the next host.
    print('claims refused by placement: %d' % refused)
    assert refused > 0
    assert kinds == {'refused'}
    assert sorted(results) == sorted(uuids)

    landed = {u: r for u, r in results.items() if 'host' in r}
    failed = {u: r for u, r in results.items() if 'error' in r}
    # Every request lands or fails with a reason.
    assert len(landed) + len(failed) == REQUESTS
    for r in failed.values():
        assert r['error'] == 'NoValidHost'
        assert r['reason'].startswith('No valid host: ')
    # Placement agrees with every decision, and nothing is overcommitted.
    host_uuid = {
        rp['name']: rp['uuid']
        for rp in fx.placement_get(cloud, '/resource_providers')[
            'resource_providers'
        ]
    }
    for u, r in landed.items():
        allocations = fx.consumer_allocations(cloud, u)
        assert list(allocations) == [host_uuid[r['host']]]
    for u in failed:
        assert fx.consumer_allocations(cloud, u) == {}
    usages = fx.provider_usages(cloud)
    for name, res in usages.items():
        for rc, (used, capacity) in res.items():
            assert used <= capacity, (name, rc, used, capacity)
    # Claims only fail when a host is really full, so exactly the capacity
    # was used: no request was refused while room was left.
    assert sum(res['VCPU'][0] for res in usages.values()) == len(landed)
    assert len(landed) == HOSTS * VCPUS
    assert len(failed) == REQUESTS - HOSTS * VCPUS
