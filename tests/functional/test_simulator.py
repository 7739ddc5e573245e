"""nimbus simulate: deterministic replays through the real scheduler."""

import json

import pytest

from nimbus.cmd import cli
from nimbus.simulator import engine
from nimbus.simulator import trace


def test_deterministic_and_accounted():
    arrivals = trace.generate('arrivals=300,rate=2,lifetime=200', seed=3)
    assert arrivals == trace.generate(
        'arrivals=300,rate=2,lifetime=200', seed=3
    )
    first = engine.Simulation(10, seed=3, samples=4).run(arrivals)
    again = engine.Simulation(10, seed=3, samples=4).run(arrivals)
    assert first == again
    assert first['placed'] + first['rejected'] == 300
    last = first['timeline'][-1]
    assert set(last['utilisation']) == {'VCPU', 'MEMORY_MB', 'DISK_GB'}
    assert all(0 <= u <= 1 for u in last['utilisation'].values())
    assert (
        last['per_host']['min']
        <= last['per_host']['mean']
        <= last['per_host']['max']
    )


def test_spread_and_stack_differ():
    arrivals = trace.generate(
        'arrivals=100,rate=2,lifetime=0,groups=0', seed=1
    )
    spread = engine.Simulation(
        20, seed=1, settings=engine.weigher_settings('spread')
    ).run(arrivals)
    stack = engine.Simulation(
        20, seed=1, settings=engine.weigher_settings('stack')
    ).run(arrivals)
    assert spread['timeline'][-1]['per_host']['empty'] == 0
    assert stack['timeline'][-1]['per_host']['empty'] > 10


def test_full_cloud_rejects_and_frees_on_departure():
    arrivals = [
        {'t': i, 'flavor': 'm1.xlarge', 'lifetime': None} for i in range(40)
    ]
    result = engine.Simulation(2, samples=2).run(arrivals)
    assert result['rejected'] > 0
    assert result['timeline'][-1]['fits']['m1.xlarge'] == 0
    short = [
        {'t': i, 'flavor': 'm1.xlarge', 'lifetime': 0.5} for i in range(40)
    ]
    assert engine.Simulation(2, samples=2).run(short)['rejected'] == 0


def test_anti_affinity_groups_land_apart():
    arrivals = [
        {
            't': i,
            'flavor': 'm1.small',
            'lifetime': None,
            'group': 'g',
            'policy': 'anti-affinity',
        }
        for i in range(4)
    ]
    sim = engine.Simulation(3)
    result = sim.run(arrivals)
    assert result['placed'] == 3 and result['rejected'] == 1
    hosts = {sim.placement.host_of(c) for c in sim.placement.allocations}
    assert len(hosts) == 3


def test_trace_roundtrip_and_errors(tmp_path):
    arrivals = trace.generate('arrivals=20', seed=2)
    path = tmp_path / 'trace.jsonl'
    trace.write(str(path), arrivals)
    assert trace.read(str(path)) == arrivals
    (tmp_path / 'bad.jsonl').write_text('{"flavor": "m1.small"}\n')
    with pytest.raises(ValueError):
        trace.read(str(tmp_path / 'bad.jsonl'))
    with pytest.raises(ValueError):
        trace.parse_spec('nope=1')


def test_cli_compare(tmp_path, capsys):
    path = tmp_path / 't.jsonl'
    with pytest.raises(SystemExit) as exit_:
        cli.main(
            [
                'simulate',
                '--hosts',
                '5',
                '--generate',
                'arrivals=50',
                '--compare',
                'spread',
                'stack',
                '--format',
                'json',
                '--write-trace',
                str(path),
            ]
        )
    assert exit_.value.code == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {'spread', 'stack'}
    assert len(trace.read(str(path))) == 50
    with pytest.raises(SystemExit) as exit_:
        cli.main(['simulate', '--hosts', '5', '--trace', str(path)])
    assert exit_.value.code == 0
    assert 'spread: 50 arrivals' in capsys.readouterr().out


def test_recorder_makes_a_trace(tmp_path):
    from nimbus.cmd import cli_insight

    path = tmp_path / 'recorded.jsonl'
    with open(path, 'w') as f:
        rec = cli_insight.TraceRecorder(f)
        rec.record(
            {'flavor': {'name': 'm1.small'}, 'num_instances': 2}, now=100.0
        )
        rec.record(
            {
                'flavor': {'name': 'm1.large'},
                'num_instances': 1,
                'instance_group': 'anti-affinity',
                'request_id': 'r',
            },
            now=101.5,
        )
    arrivals = trace.read(str(path))
    assert [(a['t'], a['flavor']) for a in arrivals] == [
        (0.0, 'm1.small'),
        (0.0, 'm1.small'),
        (1.5, 'm1.large'),
    ]
    assert arrivals[2]['policy'] == 'anti-affinity'
    assert engine.Simulation(3).run(arrivals)['placed'] == 3
