"""benchmarks/boot_bench.py: a small all-in-one run writes the JSON the
README's figures come from, and every server it asked for is accounted
for (ACTIVE, ERROR or unfinished). No timing assertions."""

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
BENCH = os.path.join(ROOT, 'benchmarks', 'boot_bench.py')


@pytest.mark.slow
def test_all_in_one_run_writes_its_figures(tmp_path):
    out = tmp_path / 'boot.json'
    result = subprocess.run(
        [
            sys.executable,
            BENCH,
            '--all-in-one',
            '--hosts',
            '4',
            '--rates',
            '5',
            '10',
            '--duration',
            '1',
            '--multi',
            '12',
            '--idle',
            '1',
            '--json',
            str(out),
            # Any CPU at all is over it: the run still writes its figures,
            # names each rate over the bound and exits 1.
            '--max-cpu-ms',
            '-1',
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(tmp_path),
    )
    assert result.returncode == 1, result.stdout + result.stderr[-3000:]
    for rate in (5, 10):
        assert 'offered %d/s: ' % rate in result.stdout
    assert result.stdout.count('over --max-cpu-ms -1') == 2
    figures = json.loads(out.read_text())
    assert figures['mode'] == 'all-in-one' and figures['hosts'] == 4
    assert [r['offered_per_s'] for r in figures['rates']] == [5, 10]
    for row in figures['rates']:
        assert row['requests'] == row['offered_per_s']
        assert row['accepted'] == row['requests']
        assert (
            row['active'] + row['error'] + row['unfinished'] == row['accepted']
        )
        assert row['active'] == row['requests']
        assert 0 < row['p50_s'] <= row['p99_s']
        assert set(row['cpu_s']) == {'all-in-one'}
        assert set(row['cpu_ms_per_boot']) == {'all-in-one'}
        assert row['cpu_ms_per_boot']['all-in-one'] >= 0
        assert 1 <= row['spread']['hosts_used'] <= 4
        assert row['spread']['max_per_host'] >= row['spread']['even_per_host']
    assert set(figures['idle_cpu_s_per_s']) == {'all-in-one'}
    multi = figures['multi_create']
    assert multi['instances'] == multi['active'] == 12
    assert multi['all_active_s'] is not None
    assert (
        0
        < multi['first_active_s']
        <= multi['half_active_s']
        <= multi['all_active_s']
    )
    assert set(multi['cpu_s']) == {'all-in-one'}
    assert multi['spread']['even_per_host'] == 3.0


def _bench_module(name):
    sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))
    try:
        return __import__(name)
    finally:
        sys.path.pop(0)


def test_cpu_per_boot_takes_the_background_out():
    bench = _bench_module('boot_bench')
    cpu = {'api': 3.0, 'placement': 1.0}
    background = {'api': 0.1, 'placement': 0.5}
    # 10 s of phase: api 3.0 - 1.0 over 100 boots = 20 ms; placement's
    # background exceeds its phase CPU: 0, never negative.
    assert bench.per_boot(cpu, background, 10.0, 100) == {
        'api': 20.0,
        'placement': 0.0,
    }
    assert bench.per_boot(cpu, background, 10.0, 0) == {}


def test_max_cpu_ms_names_each_rate_over_it():
    bench = _bench_module('boot_bench')
    result = {
        'rates': [
            {'offered_per_s': 5, 'cpu_ms_per_boot': {'api': 20.0, 'x': 15.0}},
            {'offered_per_s': 10, 'cpu_ms_per_boot': {'api': 30.0, 'x': 20.5}},
            # no boot went ACTIVE: nothing to judge
            {'offered_per_s': 20, 'cpu_ms_per_boot': {}},
        ]
    }
    assert bench.over_budget(result, 40) == [(10, 50.5)]
    assert bench.over_budget(result, 35) == [(10, 50.5)]
    assert bench.over_budget(result, 34.9) == [(5, 35.0), (10, 50.5)]
    assert bench.over_budget(result, 60) == []
    assert bench.over_budget({}, 1) == []


def test_stacks_summary_counts_self_and_inclusive(tmp_path):
    stacks = _bench_module('stacks')
    raw = tmp_path / 'api-25.txt'
    raw.write_text(
        'main (app.py:1);handle (app.py:10);encode (json.py:5) 30\n'
        'main (app.py:1);handle (app.py:12);query (db.py:7) 10\n'
        'garbage line\n'
    )
    parsed = stacks.parse(str(raw))
    assert parsed[0] == (
        ['main (app.py)', 'handle (app.py)', 'encode (json.py)'],
        30,
    )
    text = stacks.summarise('api', str(raw))
    assert '== api: 40 samples' in text
    assert ' 75.0%  encode (json.py)' in text
    assert '100.0%  handle (app.py)' in text  # two lines, one function
    assert stacks.record({'api': 1}, None, '25') == []


def test_options_reach_every_daemon_over_the_defaults():
    bench = _bench_module('boot_bench')
    options = bench._options(
        50, {'scheduler': {'executor_thread_pool_size': '64'}}
    )
    assert options['scheduler'] == {
        'max_placement_results': 50,
        'executor_thread_pool_size': '64',
    }
    assert options['DEFAULT']['report_interval'] == 10
    assert bench._options() == bench._options(None, {})


def test_spread_counts_servers_per_host_with_empty_hosts_as_zero():
    bench = _bench_module('boot_bench')
    active = [
        ('ACTIVE', 1.0, 'a', 'cn1'),
        ('ACTIVE', 1.0, 'b', 'cn1'),
        ('ACTIVE', 1.0, 'c', 'cn1'),
        ('ACTIVE', 1.0, 'd', 'cn2'),
    ]
    assert bench.spread(active, 4) == {
        'hosts_used': 2,
        'max_per_host': 3,
        'min_per_host': 0,
        'even_per_host': 1.0,
    }
    # A host the listing did not show (no admin view) is not counted.
    assert bench.spread([('ACTIVE', 1.0, 'e', None)], 2)['hosts_used'] == 0
