"""``nimbus simulate``: replay an arrival trace through the real scheduler.

    nimbus simulate --hosts N (--trace FILE | --generate SPEC) [--seed S]
                    [--weighers spread|stack|group.opt=v;...]
                    [--compare A B] [--samples K] [--format table|json]
                    [--write-trace FILE]

Registered in ``nimbus.cmd.cli`` by :func:`register`.
"""

import json
import sys


def _row(sample, flavors):
    util = sample['utilisation']
    spread = sample['per_host']
    return '%9.1f %6.1f%% %6.1f%% %6.1f%% %7d %6.1f%% %s %5d/%-5d %6.2f' % (
        sample['t'],
        100 * util.get('VCPU', 0),
        100 * util.get('MEMORY_MB', 0),
        100 * util.get('DISK_GB', 0),
        sample['instances'],
        100 * sample['rejection_rate'],
        ' '.join('%8d' % sample['fits'][f] for f in flavors),
        spread['min'],
        spread['max'],
        spread['stdev'],
    )


def render(name, result, out):
    flavors = (
        sorted(result['timeline'][0]['fits']) if result['timeline'] else []
    )
    out.write(
        '%s: %d arrivals, %d placed, %d rejected (%.1f%%)\n'
        % (
            name,
            result['arrivals'],
            result['placed'],
            result['rejected'],
            100 * result['rejection_rate'],
        )
    )
    out.write(
        '%9s %7s %7s %7s %7s %7s %s %11s %6s\n'
        % (
            't',
            'VCPU',
            'RAM',
            'DISK',
            'inst',
            'reject',
            ' '.join('%8s' % f[-8:] for f in flavors),
            'min/max',
            'stdev',
        )
    )
    for sample in result['timeline']:
        out.write(_row(sample, flavors) + '\n')


def _simulate(args):
    from nimbus.simulator import engine
    from nimbus.simulator import trace as trace_mod

    try:
        if args.trace:
            arrivals = trace_mod.read(args.trace)
        else:
            arrivals = trace_mod.generate(args.generate, seed=args.seed)
        unknown = sorted(
            {a['flavor'] for a in arrivals} - set(trace_mod.FLAVORS)
        )
        if unknown:
            raise ValueError(
                'unknown flavors %s (known: %s)'
                % (', '.join(unknown), ', '.join(sorted(trace_mod.FLAVORS)))
            )
        configs = args.compare or [args.weighers]
        settings = [engine.weigher_settings(c) for c in configs]
    except (OSError, ValueError) as exc:
        sys.exit('nimbus simulate: %s' % exc)
    if args.write_trace:
        trace_mod.write(args.write_trace, arrivals)
    results = {}
    for name, setting in zip(configs, settings):
        sim = engine.Simulation(
            args.hosts, seed=args.seed, settings=setting, samples=args.samples
        )
        results[name] = sim.run(arrivals)
    if args.format == 'json':
        print(json.dumps(results, indent=2, sort_keys=True))
        return 0
    for name, result in results.items():
        render(name, result, sys.stdout)
        sys.stdout.write('\n')
    return 0


def register(sub):
    sim = sub.add_parser(
        'simulate',
        help='replay an arrival trace through the real scheduler, in process',
    )
    src = sim.add_mutually_exclusive_group(required=True)
    src.add_argument(
        '--trace',
        metavar='FILE',
        help='JSON lines: {"t", "flavor", "lifetime", '
        '"group", "policy"} (docs/insight.md)',
    )
    src.add_argument(
        '--generate',
        metavar='SPEC',
        help='arrivals=N,rate=R,lifetime=L,'
        'flavors=m1.small:4+m1.large:1,groups=P',
    )
    sim.add_argument('--hosts', type=int, default=100)
    sim.add_argument('--seed', type=int, default=0)
    sim.add_argument(
        '--weighers',
        default='spread',
        help='spread, stack or group.option=value;...',
    )
    sim.add_argument(
        '--compare',
        nargs=2,
        metavar=('A', 'B'),
        help='run the trace under two weigher settings',
    )
    sim.add_argument(
        '--samples', type=int, default=10, help='rows over simulated time'
    )
    sim.add_argument('--format', choices=['table', 'json'], default='table')
    sim.add_argument(
        '--write-trace', metavar='FILE', help='save the (generated) trace'
    )
    sim.set_defaults(func=_simulate)
