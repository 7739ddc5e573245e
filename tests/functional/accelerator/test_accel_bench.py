"""benchmarks/accel_bench.py at a tiny size: both paths boot, the
figures and the ratio come out."""

import importlib.util
import json
import os

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


def test_accel_bench_runs_at_tiny_size(tmp_path, capsys):
    out = tmp_path / 'bench.json'
    result = _bench().main(
        ['--hosts', '2', '--servers', '2', '--json', str(out)]
    )
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
