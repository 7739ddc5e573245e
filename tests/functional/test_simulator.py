"""nimbus simulate: deterministic replays through the real scheduler."""

import json
import sys

import pytest

from nimbus.cmd import cli
from nimbus.simulator import engine
from nimbus.simulator import hosts as hosts_mod
from nimbus.simulator import plot
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
        rec.record(
            {
                'flavor': {'name': 'm1.small'},
                'num_instances': 1,
                'request_groups': {
                    'resources': 'DISK_GB:20,MEMORY_MB:2048,VCPU:1',
                    'resources_device_profile_0': 'FPGA:1',
                    'required_device_profile_0': 'CUSTOM_FPGA_SIM',
                    'root_required': 'COMPUTE_ACCELERATORS',
                    'limit': '1000',
                },
            },
            now=102.0,
        )
    arrivals = trace.read(str(path))
    assert [(a['t'], a['flavor']) for a in arrivals] == [
        (0.0, 'm1.small'),
        (0.0, 'm1.small'),
        (1.5, 'm1.large'),
        (2.0, 'm1.small'),
    ]
    assert arrivals[2]['policy'] == 'anti-affinity'
    assert arrivals[3]['device_groups'] == [
        {'resources:FPGA': '1', 'trait:CUSTOM_FPGA_SIM': 'required'}
    ]
    spec = hosts_mod.parse_host_spec('devices=FPGA:1,device_hosts=0.5')
    sim = engine.Simulation(4, host_spec=spec)
    assert sim.run(arrivals)['placed'] == 4
    device_hosts = {'host-%d' % i for i in range(4) if spec.has_devices(i, 4)}
    assert device_hosts == {'host-1', 'host-3'}
    assert sim.decisions[3] in device_hosts


def _run(backend, arrivals, hosts=8, **kw):
    sim = engine.Simulation(hosts, seed=5, samples=5, backend=backend, **kw)
    try:
        return sim.run(arrivals), sim.decisions
    finally:
        sim.close()


@pytest.mark.slow
def test_backends_agree_on_a_small_trace():
    """The candidate engine, placement's REST app and the flat in-memory
    table make the same decisions and see the same utilisation."""
    arrivals = trace.generate(
        'arrivals=120,rate=1,lifetime=200,groups=0.2,'
        'flavors=m1.small:2+m1.large:2+m1.xlarge:1',
        seed=4,
    )
    for setting in ('spread', 'stack'):
        settings = engine.weigher_settings(setting)
        small = hosts_mod.parse_host_spec(
            'vcpus=16,ram=65536,disk=1000,reserved_ram=512,ram_ratio=1.5'
        )
        runs = {
            b: _run(b, arrivals, hosts=4, settings=settings, host_spec=small)
            for b in ('engine', 'memory', 'api')
        }
        result, decisions = runs['engine']
        assert result['rejected'] > 0 and result['placed'] > 0
        assert len(set(decisions) - {None}) > 1
        for backend in ('memory', 'api'):
            assert runs[backend][1] == decisions, backend
            assert runs[backend][0] == result, backend


def test_backends_agree_with_randomized_candidates_and_a_cap():
    arrivals = trace.generate('arrivals=60,rate=1,lifetime=30', seed=8)
    settings = engine.weigher_settings(
        'spread;placement.randomize_allocation_candidates=true;'
        'scheduler.max_placement_results=3'
    )
    got = {
        b: _run(b, arrivals, settings=settings) for b in ('engine', 'memory')
    }
    assert got['engine'] == got['memory']
    plain = _run('engine', arrivals)
    assert plain[1] != got['engine'][1]


def test_backends_agree_when_placement_answers_the_first_hosts():
    """A limit below the host count: placement answers the first hosts
    with room in uuid order (the engine reads its anchors only as far as
    the limit), as the memory backend's own sorted lists do."""
    arrivals = trace.generate(
        'arrivals=80,rate=1,lifetime=40,groups=0.2', seed=9
    )
    small = hosts_mod.parse_host_spec('vcpus=8,ram=16384,disk=400')
    for setting in ('spread', 'stack'):
        settings = engine.weigher_settings(
            setting + ';scheduler.max_placement_results=3'
        )
        got = {
            b: _run(b, arrivals, hosts=10, settings=settings, host_spec=small)
            for b in ('engine', 'memory')
        }
        assert got['engine'] == got['memory'], setting
        assert len(set(got['engine'][1]) - {None}) > 3


def test_accelerators_land_on_device_hosts():
    spec = hosts_mod.parse_host_spec(
        'vcpus=16,ram=65536,disk=1000,devices=FPGA:2+PGPU:1,device_hosts=0.5'
    )
    arrivals = [
        {
            't': i,
            'flavor': 'm1.small',
            'lifetime': None,
            'accelerators': {'FPGA': 1},
        }
        for i in range(10)
    ] + [
        {
            't': 10 + i,
            'flavor': 'm1.small',
            'lifetime': None,
            'device_profile': 'gpu',
        }
        for i in range(4)
    ]
    result, decisions = _run('engine', arrivals, hosts=6, host_spec=spec)
    # 3 of 6 hosts carry 2 FPGAs and 1 PGPU each
    assert decisions[:6].count(None) == 0 and decisions[6:10] == [None] * 4
    assert decisions[10:13].count(None) == 0 and decisions[13] is None
    device_hosts = {'host-%d' % i for i in range(6) if spec.has_devices(i, 6)}
    assert len(device_hosts) == 3
    assert set(decisions) - {None} <= device_hosts
    last = result['timeline'][-1]
    assert last['utilisation']['FPGA'] == 1.0
    assert last['utilisation']['PGPU'] == 1.0
    assert last['fits']['FPGA'] == 0 and last['fits']['FPGA_hosts'] == 0
    assert _run('api', arrivals, hosts=6, host_spec=spec) == (
        result,
        decisions,
    )
    with pytest.raises(ValueError):
        engine.Simulation(2, host_spec=spec, backend='memory')


def test_device_profiles_and_bad_traces(tmp_path):
    path = tmp_path / 'profiles.json'
    path.write_text(
        json.dumps(
            {'two-fpgas': [{'resources:FPGA': '1'}, {'resources:FPGA': '1'}]}
        )
    )
    known = trace.profiles(str(path))
    groups = trace.request_groups({'device_profile': 'two-fpgas'}, known)
    assert [g['resources'] for g in groups] == [{'FPGA': 1}, {'FPGA': 1}]
    with pytest.raises(ValueError, match='unknown device profile'):
        trace.check(
            [{'t': 0, 'flavor': 'm1.small', 'device_profile': 'nope'}], known
        )
    with pytest.raises(ValueError, match='unknown flavor'):
        trace.check([{'t': 0, 'flavor': 'm9.huge'}])
    with pytest.raises(ValueError):
        trace.check(
            [{'t': 0, 'flavor': 'm1.small', 'accelerators': {'FPGA': 'x'}}]
        )
    with pytest.raises(ValueError):
        hosts_mod.parse_host_spec('devices=FPGA:x')
    generated = trace.generate(
        'arrivals=50,accelerators=FPGA:1,accelerated=0.5', seed=1
    )
    assert 0 < sum('accelerators' in a for a in generated) < 50


def test_cli_plot(tmp_path, capsys):
    pytest.importorskip('matplotlib')
    out = tmp_path / 'plot'
    generate = 'arrivals=80,rate=1,lifetime=30'
    with pytest.raises(SystemExit) as exit_:
        cli.main(
            [
                'simulate',
                '--hosts',
                '4',
                '--generate',
                generate,
                '--samples',
                '4',
                '--compare',
                'spread',
                'stack',
                '--plot',
                str(out),
            ]
        )
    assert exit_.value.code == 0
    assert 'spread: 80 arrivals' in capsys.readouterr().out
    png = (out / 'simulation.png').read_bytes()
    assert png.startswith(b'\x89PNG\r\n\x1a\n') and len(png) > 10000
    page = (out / 'simulation.html').read_text()
    assert '<img src="simulation.png"' in page
    arrivals = trace.generate(generate, seed=0)
    for name in ('spread', 'stack'):
        # the same seed replays the same run the command made
        result = engine.Simulation(
            4, settings=engine.weigher_settings(name), samples=4
        ).run(arrivals)
        assert (
            '<h2>%s: %d arrivals, %d placed, %d rejected</h2>'
            % (name, result['arrivals'], result['placed'], result['rejected'])
            in page
        )
        for sample in result['timeline']:
            assert (
                '<td>%.1f</td><td>%.1f%%</td>'
                % (sample['t'], 100 * sample['utilisation']['DISK_GB'])
                in page
            )


def test_cli_errors(capsys):
    for argv, message in (
        (['--plot', 'x'], '--plot goes with --compare'),
        (['--host-spec', 'cores=2'], 'bad --host-spec item'),
        (['--weighers', 'nope.x=1'], 'bad scheduler setting'),
        (['--weighers', 'placement.bogus=1'], 'unknown placement option'),
        (
            [
                '--weighers',
                'placement.allocation_candidates_generation_strategy=up',
            ],
            'depth-first or breadth-first',
        ),
        (
            ['--placement', 'memory', '--host-spec', 'devices=FPGA:1'],
            'without devices',
        ),
    ):
        with pytest.raises(SystemExit) as exit_:
            cli.main(
                ['simulate', '--hosts', '2', '--generate', 'arrivals=3'] + argv
            )
        assert message in str(exit_.value.code)


def test_cli_plot_without_matplotlib(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, 'matplotlib', None)
    with pytest.raises(SystemExit) as exit_:
        cli.main(
            [
                'simulate',
                '--generate',
                'arrivals=3',
                '--compare',
                'spread',
                'stack',
                '--plot',
                str(tmp_path),
            ]
        )
    assert str(exit_.value.code) == 'nimbus simulate: ' + plot.MISSING
    assert not list(tmp_path.iterdir())


def test_cli_sample_percent_side_by_side(capsys):
    """The trace with sampling off and on: both runs, their quality and
    decision time, and the table that puts them side by side."""
    argv = [
        'simulate',
        '--hosts',
        '12',
        '--generate',
        'arrivals=120,rate=2,lifetime=40',
        '--samples',
        '2',
        '--weighers',
        'spread;filter_scheduler.min_hosts_to_score=2',
        '--sample-percent',
        '20',
    ]
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv + ['--format', 'json'])
    assert exit_.value.code == 0
    out = json.loads(capsys.readouterr().out)
    base = 'spread;filter_scheduler.min_hosts_to_score=2'
    assert set(out) == {base, base + ' sampled 20%'}
    for result in out.values():
        assert result['decision']['decisions'] == 120
        assert set(result['quality']) >= {'rejection_rate', 'VCPU', 'per_host'}
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    text = capsys.readouterr().out
    assert 'side by side' in text and base + ' sampled 20%' in text
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv + ['--compare', 'spread', 'stack'])
    assert 'do not go together' in str(exit_.value.code)
