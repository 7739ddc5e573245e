"""benchmarks/boot_bench.py: a small all-in-one run writes the JSON the
README's figures come from, and every server it asked for is accounted
for (ACTIVE, ERROR or unfinished). No timing assertions."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(
    os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    )
)
BENCH = os.path.join(ROOT, 'benchmarks', 'boot_bench.py')


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
            '--json',
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(tmp_path),
    )
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
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
    multi = figures['multi_create']
    assert multi['instances'] == multi['active'] == 12
    assert multi['all_active_s'] is not None
