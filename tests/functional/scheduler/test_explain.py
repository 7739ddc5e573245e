"""Explain: a failed request's fault, the admin's records, the dry run over
REST and through the ``nimbus schedule --dry-run`` CLI (a subprocess)."""

import json
import os
import subprocess
import sys

import pytest

from nimbus.allinone import client as client_mod
from tests.functional.scheduler import fixtures as fx

HOSTS = {
    'host-2': {'fake_driver': {'cpu_features': ['sse4_2']}},
    'host-4': {'fake_driver': {'hypervisor_version': 9000000}},
}


@pytest.fixture
def api(make_cloud):
    api = fx.admin_client(make_cloud(hosts=4, host_overrides=HOSTS))
    api.flavor = api.create_flavor(
        'avx2',
        1,
        512,
        1,
        extra_specs={'capabilities:cpu_info:features': '<all-in> avx2'},
    )
    api.image = api.create_image('img')
    (svc,) = [
        s
        for s in api.get('/os-services')['services']
        if s['host'] == 'host-1' and s['binary'] == 'nova-compute'
    ]
    # Forced down (not disabled: a disabled compute also carries
    # COMPUTE_STATUS_DISABLED in placement, which then never proposes it),
    # so the explanation shows ComputeFilter rejecting it.
    api._call(
        'PUT',
        api.url + '/os-services/%s' % svc['id'],
        json={'forced_down': True},
    )
    fx.wait_dry_run(
        api,
        api.flavor,
        lambda r: 'host-1' not in fx.ranked_hosts(r),
        'host-1 to be forced down',
    )
    return api


def _cli(api, *args):
    exe = os.path.join(os.path.dirname(sys.executable), 'nimbus')
    return subprocess.run(
        [exe, 'schedule', '--url', api.cloud.api_url] + list(args),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=api.cloud.state_dir,
    )


def test_failure_fault_names_every_step_and_records_hold_all(api):
    # host-1 down, host-2 lacks avx2, host-3 too old for the image.
    newer = api.create_image(
        'newer', {'img_hv_requested_version': '>= 9000001'}
    )
    server = fx.boot_and_settle(api, 'doomed', api.flavor, newer)
    assert server['status'] == 'ERROR'
    fault = api.server(server['id'])['fault']
    assert fault['message'].startswith('No valid host was found')
    details = fault['details']
    for text in (
        'placement returned 4 hosts',
        'ComputeFilter: 4 in, 3 out',
        'ComputeCapabilitiesFilter: 3 in, 2 out',
        'ImagePropertiesFilter: 2 in, 0 out',
        'host-1: ComputeFilter: compute service is down',
        'host-2: ComputeCapabilitiesFilter: cpu_info:features',
        'host-3: ImagePropertiesFilter: hypervisor_version 8002000',
    ):
        assert text in details, (text, details)
    assert fx.consumer_allocations(api.cloud, server['id']) == {}

    (record,) = api.get(
        '/os-scheduler/records?instance_uuid=%s' % server['id']
    )['records']
    assert record['outcome'] == 'failed'
    detail = record['detail']
    assert detail['placement_candidates'] == 4
    assert [(f['name'], f['in'], f['out']) for f in detail['filters']] == [
        ('ComputeFilter', 4, 3),
        ('ComputeCapabilitiesFilter', 3, 2),
        ('ImagePropertiesFilter', 2, 0),
    ]
    by_host = {r['host']: r for r in detail['rejected']}
    assert set(by_host) == {'host-1', 'host-2', 'host-3', 'host-4'}
    assert by_host['host-4']['filter'] == 'ImagePropertiesFilter'
    assert 'resources=' in detail['placement_query']
    # Records are for admins only.
    user = client_mod.ComputeClient(
        api.cloud.api_url, user='u', project='p', roles='member'
    )
    with pytest.raises(RuntimeError, match='403'):
        user.get('/os-scheduler/records?instance_uuid=%s' % server['id'])


def test_empty_placement_answer_says_what_was_asked(api):
    huge = api.create_flavor('huge', 4096, 512, 1)
    server = fx.boot_and_settle(api, 'huge', huge, api.image)
    assert server['status'] == 'ERROR'
    details = api.server(server['id'])['fault']['details']
    assert (
        'placement returned 0 hosts for GET /allocation_candidates?' in details
    )
    assert 'VCPU:4096' in details


@pytest.mark.slow
def test_success_is_recorded_with_alternates(api):
    server = fx.boot_and_settle(api, 'ok', api.flavor, api.image)
    assert server['status'] == 'ACTIVE'
    (record,) = api.get(
        '/os-scheduler/records?instance_uuid=%s' % server['id']
    )['records']
    assert record['outcome'] == 'scheduled'
    (inst,) = record['detail']['instances']
    assert inst['host'] == fx.host_of(server)
    assert inst['host'] not in inst['alternates']
    assert set(inst['alternates']) <= {'host-3', 'host-4'}


def _check_dry_run(result, placed_host=None):
    assert result['placement_candidates'] == 4
    hosts = fx.ranked_hosts(result)
    assert set(hosts) == {'host-3', 'host-4'}
    weights = [h['weight'] for h in result['ranked']]
    assert weights == sorted(weights, reverse=True)
    for host in result['ranked']:
        weighers = host['weighers']
        assert {
            'RAMWeigher',
            'CPUWeigher',
            'DiskWeigher',
            'IoOpsWeigher',
            'BuildFailureWeigher',
            'HypervisorVersionWeigher',
        } <= set(weighers)
        for values in weighers.values():
            assert set(values) >= {
                'raw',
                'normalized',
                'multiplier',
                'weighted',
            }
            assert 0.0 <= values['normalized'] <= 1.0
            assert values['weighted'] == pytest.approx(
                values['normalized'] * values['multiplier']
            )
        assert host['weight'] == pytest.approx(
            sum(v['weighted'] for v in weighers.values())
        )
    # host-4's newer hypervisor normalises to 1, host-3's to 0.
    by_host = {h['host']: h['weighers'] for h in result['ranked']}
    assert by_host['host-4']['HypervisorVersionWeigher']['raw'] == 9000000
    assert by_host['host-4']['HypervisorVersionWeigher']['normalized'] == 1.0
    assert by_host['host-3']['HypervisorVersionWeigher']['normalized'] == 0.0
    rejected = {r['host']: r for r in result['rejected']}
    assert rejected['host-1']['filter'] == 'ComputeFilter'
    assert rejected['host-2']['filter'] == 'ComputeCapabilitiesFilter'


@pytest.mark.slow
def test_dry_run_rest_and_cli_rank_without_claiming(api):
    before = fx.provider_usages(api.cloud)
    result = fx.dry_run(api, api.flavor, image=api.image)
    _check_dry_run(result)
    assert fx.ranked_hosts(result)[0] == 'host-4'

    proc = _cli(
        api,
        '--dry-run',
        '--flavor',
        'avx2',
        '--image',
        'img',
        '--hint',
        'build_near_host_ip=127.0.0.1',
        '--hint',
        'cidr=/8',
        '--format',
        'json',
    )
    assert proc.returncode == 0, proc.stderr
    cli_result = json.loads(proc.stdout)
    _check_dry_run(cli_result)
    assert fx.ranked_hosts(cli_result) == fx.ranked_hosts(result)

    proc = _cli(api, '--dry-run', '--flavor', api.flavor['id'])
    assert proc.returncode == 0, proc.stderr
    assert 'host-4' in proc.stdout and 'ComputeFilter' in proc.stdout
    assert 'nothing was claimed' in proc.stdout

    # Nothing was claimed: usages are unchanged and no server exists.
    assert fx.provider_usages(api.cloud) == before
    assert all(u == 0 for rp in before.values() for u, _c in rp.values())
    assert api.servers() == []
    # The dry run ranks exactly as a real build then chooses.
    server = fx.boot_and_settle(api, 'real', api.flavor, api.image)
    assert fx.host_of(server) == 'host-4'


def test_cli_errors_are_readable(api):
    proc = _cli(api, '--dry-run', '--flavor', 'no-such-flavor')
    assert proc.returncode != 0
    assert '400' in proc.stderr and 'no-such-flavor' in proc.stderr


@pytest.mark.slow
def test_cli_dry_run_of_several_instances(api):
    # 60000 MB each: two fit on each of host-3 and host-4 (host-1 is down,
    # host-2 lacks avx2), so 4 of 6 would be placed.
    big = api.create_flavor(
        'big-avx2',
        1,
        60000,
        1,
        extra_specs={'capabilities:cpu_info:features': '<all-in> avx2'},
    )
    before = fx.provider_usages(api.cloud)
    proc = _cli(
        api,
        '--dry-run',
        '--flavor',
        'big-avx2',
        '--num-instances',
        '6',
        '--format',
        'json',
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result['instances'] == 6 and result['placed'] == 4
    hosts = [p['host'] for p in result['placements']]
    assert sorted(hosts) == ['host-3', 'host-3', 'host-4', 'host-4']
    for placement in result['placements']:
        assert placement['nodename'] == placement['host']
        assert placement['compute_node_uuid'] and placement['cell_uuid']
        assert set(placement['alternates']) <= {'host-3', 'host-4'}
    assert result['placements_message'].startswith(
        '4 of 6 instances would be placed: '
    )

    proc = _cli(
        api, '--dry-run', '--flavor', big['id'], '--num-instances', '6'
    )
    assert proc.returncode == 0, proc.stderr
    assert 'Placements of 6 instances' in proc.stdout
    assert result['placements_message'] in ' '.join(proc.stdout.split())
    assert 'Nothing was claimed.' in proc.stdout
    table = proc.stdout.split('Placements of 6 instances', 1)[1]
    assert table.count('host-3') >= 2 and table.count('host-4') >= 2

    proc = _cli(
        api, '--dry-run', '--flavor', 'big-avx2', '--num-instances', '2'
    )
    assert proc.returncode == 0, proc.stderr
    assert (
        '2 of 2 instances would be placed (nothing was claimed).'
        in proc.stdout
    )
    assert 'placements_message' not in proc.stdout

    # Nothing was claimed.
    assert fx.provider_usages(api.cloud) == before
    assert api.servers() == []


@pytest.mark.parametrize('value', ['0', '-3', 'many'])
def test_cli_refuses_a_bad_instance_count(tmp_path, value):
    # Refused before any request (nothing listens on the URL given).
    exe = os.path.join(os.path.dirname(sys.executable), 'nimbus')
    proc = subprocess.run(
        [
            exe,
            'schedule',
            '--url',
            'http://127.0.0.1:9',
            '--dry-run',
            '--flavor',
            'avx2',
            '--num-instances',
            value,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(tmp_path),
    )
    assert proc.returncode == 2
    assert '--num-instances' in proc.stderr and 'at least 1' in proc.stderr
