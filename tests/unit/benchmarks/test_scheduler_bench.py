"""benchmarks/scheduler_bench.py runs and writes the JSON the issue asks for.

Small sizes only (the lead runs the real ones): the shape of the JSON, that
``hosts_passing`` is what the default filters should pass (computed here
from the synthetic hosts, without the filters), and that the multi-create
figure goes through the scheduler service's ``select_destinations`` with a
real placement. No timing assertions."""

import json
import math
import os
import subprocess
import sys

import pytest

from nimbus.scheduler import testing

ROOT = os.path.dirname(
    os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    )
)
BENCH = os.path.join(ROOT, 'benchmarks', 'scheduler_bench.py')
HOSTS = 200


def _run(tmp_path, *args):
    out = tmp_path / 'bench.json'
    res = subprocess.run(
        [sys.executable, BENCH, *args, '--json', str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(tmp_path),
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(out.read_text()), res.stdout


def _expected_passing():
    """Hosts the bench's placement answer holds (room for one instance of
    2 vCPU / 4096 MB / 20 GB) that the default filters keep: enabled
    services for ``plain``; for ``props`` also aes and sse4_2, QEMU and a
    hypervisor version of at least 7000000 (the image's x86_64/qemu/hvm
    matches every synthetic host)."""
    src = testing.make_source(
        HOSTS, seed=42, cells=2, az_every=3, disabled_every=50
    )
    disabled = {s['host'] for s in src.services() if s['disabled']}
    plain = props = 0
    for cn in src.compute_nodes():
        fits = (
            cn['vcpus'] * cn['cpu_allocation_ratio'] - cn['vcpus_used'] >= 2
            and cn['memory_mb'] * cn['ram_allocation_ratio']
            - cn['memory_mb_used']
            >= 4096
            and cn['local_gb'] * cn['disk_allocation_ratio']
            - cn['local_gb_used']
            >= 20
        )
        if not fits or cn['host'] in disabled:
            continue
        plain += 1
        if (
            {'aes', 'sse4_2'} <= set(cn['cpu_info']['features'])
            and cn['hypervisor_type'] == 'QEMU'
            and cn['hypervisor_version'] >= 7000000
        ):
            props += 1
    return {'plain': plain, 'props': props}


def test_decision_json_has_the_issues_shape(tmp_path):
    data, stdout = _run(tmp_path, '--hosts', str(HOSTS), '--repeat', '1')
    assert set(data) == {'hosts', 'results'}
    assert data['hosts'] == HOSTS
    assert set(data['results']) == {'plain', 'props'}
    expected = _expected_passing()
    assert 0 < expected['props'] < expected['plain'] < HOSTS
    for name, result in data['results'].items():
        assert set(result) == {
            'decision_ms_median',
            'decision_ms_min',
            'decision_cpu_ms_median',
            'refresh_ms_median',
            'hosts_passing',
        }
        for key in (
            'decision_ms_median',
            'decision_ms_min',
            'decision_cpu_ms_median',
            'refresh_ms_median',
        ):
            value = result[key]
            assert isinstance(value, (int, float)) and math.isfinite(value)
            assert value >= 0
        assert isinstance(result['hosts_passing'], int)
        assert result['hosts_passing'] == expected[name], name
    assert 'hosts=   200 plain' in stdout


def test_reference_picks_the_same_host(tmp_path):
    # The reference gets the same filters (weighers' requirements included)
    # and provider summaries as the fast path, so both pick the same host.
    _data, stdout = _run(
        tmp_path, '--hosts', str(HOSTS), '--repeat', '1', '--reference'
    )
    lines = [line for line in stdout.splitlines() if 'reference' in line]
    assert len(lines) == 2, stdout
    assert all(line.endswith('same=True') for line in lines), stdout


def test_several_sizes_give_a_list(tmp_path):
    data, _stdout = _run(tmp_path, '--hosts', '50', '60', '--repeat', '1')
    assert [entry['hosts'] for entry in data] == [50, 60]
    assert all(set(entry) == {'hosts', 'results'} for entry in data)


def test_multi_create_goes_through_select_destinations(tmp_path):
    data, stdout = _run(
        tmp_path,
        '--skip-decisions',
        '--multi-create',
        '20',
        '--multi-create-hosts',
        '30',
    )
    mc = data['multi_create']
    assert mc['path'] == 'select_destinations'
    assert mc['hosts'] == 30 and mc['instances'] == 20
    assert mc['placed'] == 20
    # One GET /allocation_candidates for the whole request, one claim per
    # instance, and placement holds every claim afterwards.
    assert mc['placement_candidates_requests'] == 1
    assert mc['claims'] == 20
    assert mc['claim_requests'] == 1  # one POST /allocations for all
    assert mc['placement_vcpus_claimed'] == 20
    assert mc['seconds'] > 0
    secondary = mc['in_memory']
    assert secondary['path'] == 'FilterScheduler.schedule'
    assert secondary['placed'] == 20 and secondary['claims'] == 20
    assert 'end to end (select_destinations, real placement)' in stdout


@pytest.mark.parametrize('args', [['--hosts', 'many'], ['--nope']])
def test_bad_arguments(tmp_path, args):
    res = subprocess.run(
        [sys.executable, BENCH, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(tmp_path),
    )
    assert res.returncode == 2


def test_sample_percent_adds_the_sampled_figures(tmp_path):
    data, stdout = _run(
        tmp_path,
        '--hosts',
        str(HOSTS),
        '--repeat',
        '2',
        '--sample-percent',
        '10',
        '--min-hosts-to-score',
        '20',
    )
    for result in data['results'].values():
        sampled = result['sampled']
        assert set(sampled) == {
            'percent',
            'decision_ms_median',
            'decision_cpu_ms_median',
            'gain_wall',
            'gain_cpu',
        }
        assert sampled['percent'] == 10
    assert 'plain sampling 10% (at least 20 passing)' in stdout
