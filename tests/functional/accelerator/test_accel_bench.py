"""benchmarks/accel_bench.py at a tiny size: both paths boot, the
figures, the ratio and the per-call API figures come out; more servers
than FPGAs is refused before anything starts (exit 2); a failed server
makes the exit status 1."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(
    os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    )
)


def _bench():
    path = os.path.join(ROOT, 'benchmarks', 'accel_bench.py')
    spec = importlib.util.spec_from_file_location('accel_bench', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_accel_bench_runs_at_tiny_size(tmp_path, capsys):
    out = tmp_path / 'bench.json'
    result = _bench().main(
        ['--hosts', '2', '--servers', '2', '--calls', '3', '--json', str(out)]
    )
    assert result['failed_servers'] == 0
    calls = result['api_calls']
    assert set(calls) == {
        'profile_create',
        'arq_create',
        'arq_list_100',
        'bind_round_trip',
    }
    for figures in calls.values():
        assert figures['calls'] == 3
        assert 0 < figures['p50_ms'] <= figures['p99_ms']
    [round_] = result['rounds']
    for name in ('plain', 'accelerator'):
        assert round_[name]['active'] == 2, round_
        assert round_[name]['error'] == 0
        assert round_[name]['boots_per_s'] > 0
    summary = result['summary']
    assert summary['ratio'] == round(
        summary['plain']['boots_per_s']
        / summary['accelerator']['boots_per_s'],
        2,
    )
    assert json.loads(out.read_text())['summary'] == summary
    printed = capsys.readouterr().out
    assert 'ratio %s (target <= 2)' % summary['ratio'] in printed

    assert 'bind_round_trip' in printed


def test_more_servers_than_fpgas_is_refused_before_starting(tmp_path):
    bench = _bench()
    with pytest.raises(bench.CapacityError, match='need 3 FPGAs; .* has 2'):
        bench.main(['--hosts', '2', '--servers', '3'])
    result = subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, 'benchmarks', 'accel_bench.py'),
            '--hosts',
            '1',
            '--servers',
            '2',
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=ROOT),
    )
    assert result.returncode == 2, result.stderr
    assert 'need 2 FPGAs' in result.stderr


def test_a_server_not_active_is_a_failure():
    phase = {'servers': 4, 'active': 3}
    rounds = [{'plain': dict(phase, active=4), 'accelerator': phase}]
    assert _bench().failures(rounds) == 1
    assert _bench().failures([{'plain': dict(phase, active=4)}]) == 0


def test_side_by_side_divides_cyborg_by_nimbus():
    nimbus = {
        'arq_create': {'p50_ms': 2.0},
        'bind_round_trip': {'p50_ms': 15.0},
    }
    cyborg = {'arq_create': {'p50_ms': 50.0}, 'cyborg': '17.0.0'}
    _bench()  # puts benchmarks/ on sys.path
    import accel_api_calls

    assert accel_api_calls.side_by_side(nimbus, cyborg) == {
        'arq_create': {
            'nimbus_p50_ms': 2.0,
            'cyborg_p50_ms': 50.0,
            'times': 25.0,
        }
    }


def test_side_by_side_has_the_bind_row_when_cyborg_measured_it():
    nimbus = {'bind_round_trip': {'p50_ms': 15.0}}
    cyborg = {'bind_round_trip': {'p50_ms': 600.0, 'nova_events': 50}}
    _bench()
    import accel_api_calls

    assert accel_api_calls.side_by_side(nimbus, cyborg) == {
        'bind_round_trip': {
            'nimbus_p50_ms': 15.0,
            'cyborg_p50_ms': 600.0,
            'times': 40.0,
        }
    }


def test_cyborg_peer_stub_answers_discovery_and_records_bind_events():
    """The stand-in for Nova's external-events API (and placement's
    version document) that Cyborg's bind calls out to in the harness."""
    _bench()
    import cyborg_api_calls
    import requests

    events = []
    base = cyborg_api_calls._peer_stub(events)
    versions = requests.get(base + '/placement', timeout=10).json()
    assert versions['versions'][0]['max_version'] == '1.39'
    compute = requests.get(base + '/compute', timeout=10).json()
    assert compute['versions'][0]['id'] == 'v2.1'
    sent = [
        {
            'name': 'accelerator-request-bound',
            'server_uuid': 'c0c3e5b2-6f8a-4d47-9d0e-2a1b3c4d5e6f',
            'tag': '0d2f7a3e-1b4c-4e5d-8f6a-7b8c9d0e1f2a',
            'status': 'completed',
        }
    ]
    response = requests.post(
        base + '/compute/v2.1/os-server-external-events',
        json={'events': sent},
        timeout=10,
    )
    assert response.status_code == 200
    assert response.json()['events'] == [dict(sent[0], code=200)]
    assert events == sent
