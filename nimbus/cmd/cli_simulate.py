"""``nimbus simulate``: replay an arrival trace through the real scheduler.

    nimbus simulate --hosts N (--trace FILE | --generate SPEC) [--seed S]
                    [--weighers spread|stack|group.opt=v;...]
                    [--compare A B [--plot DIR]] [--samples K]
                    [--host-spec SPEC] [--profiles FILE]
                    [--placement engine|api|memory]
                    [--format table|json] [--write-trace FILE]

Registered in ``nimbus.cmd.cli`` by :func:`register`.
"""

import json
import sys


def _row(sample, flavors, devices):
    util = sample['utilisation']
    spread = sample['per_host']
    text = '%9.1f %6.1f%% %6.1f%% %6.1f%% %7d %6.1f%% %s %5d/%-5d %6.2f' % (
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
    for rc in devices:
        text += ' %7.1f%% %6d' % (
            100 * util.get(rc, 0),
            sample['fits'].get(rc, 0),
        )
    return text


def render(name, result, out):
    first = result['timeline'][0] if result['timeline'] else {'fits': {}}
    flavors = sorted(f for f in first['fits'] if f.startswith('m1.'))
    devices = sorted(
        rc
        for rc in first.get('utilisation', {})
        if rc not in ('VCPU', 'MEMORY_MB', 'DISK_GB')
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
        '%9s %7s %7s %7s %7s %7s %s %11s %6s%s\n'
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
            ''.join(' %8s %6s' % (rc[:8], 'free') for rc in devices),
        )
    )
    for sample in result['timeline']:
        out.write(_row(sample, flavors, devices) + '\n')


def _simulate(args):
    from nimbus.simulator import engine
    from nimbus.simulator import hosts as hosts_mod
    from nimbus.simulator import plot
    from nimbus.simulator import trace as trace_mod

    if args.plot and not args.compare:
        sys.exit('nimbus simulate: --plot goes with --compare A B')
    try:
        if args.plot:
            plot._pyplot()
        host_spec = hosts_mod.parse_host_spec(args.host_spec)
        known = trace_mod.profiles(args.profiles)
        if args.trace:
            arrivals = trace_mod.read(args.trace)
        else:
            arrivals = trace_mod.generate(args.generate, seed=args.seed)
        trace_mod.check(arrivals, known)
        configs = args.compare or [args.weighers]
        settings = [engine.weigher_settings(c) for c in configs]
        sims = [
            engine.Simulation(
                args.hosts,
                seed=args.seed,
                settings=setting,
                samples=args.samples,
                host_spec=host_spec,
                backend=args.placement,
                profiles=known,
            )
            for setting in settings
        ]
    except (OSError, ValueError, RuntimeError) as exc:
        sys.exit('nimbus simulate: %s' % exc)
    if args.write_trace:
        trace_mod.write(args.write_trace, arrivals)
    results = {}
    for name, sim in zip(configs, sims, strict=False):
        try:
            results[name] = sim.run(arrivals)
        except ValueError as exc:
            sys.exit('nimbus simulate: %s' % exc)
        finally:
            sim.close()
    if args.plot:
        png, page = plot.write(results, args.plot)
        sys.stderr.write('wrote %s and %s\n' % (png, page))
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
        help='JSON lines: {"t", "flavor", "lifetime", "group", "policy", '
        '"accelerators", "device_profile"} (docs/insight.md)',
    )
    src.add_argument(
        '--generate',
        metavar='SPEC',
        help='arrivals=N,rate=R,lifetime=L,'
        'flavors=m1.small:4+m1.large:1,groups=P,'
        'accelerators=FPGA:1,accelerated=Q',
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
        '--plot',
        metavar='DIR',
        help='with --compare: write simulation.png and simulation.html '
        'there (needs matplotlib: the plot extra)',
    )
    sim.add_argument(
        '--host-spec',
        metavar='SPEC',
        default='',
        help='vcpus=32,ram=131072,disk=2000,cpu_ratio=4,ram_ratio=1,'
        'disk_ratio=1,reserved_ram=0,reserved_disk=0,'
        'devices=FPGA:2+PGPU:1,device_hosts=0.5',
    )
    sim.add_argument(
        '--profiles',
        metavar='FILE',
        help='device profiles: a JSON object, name -> groups '
        '(built in: fpga, gpu)',
    )
    sim.add_argument(
        '--placement',
        choices=['engine', 'api', 'memory'],
        default='engine',
        help="engine: placement's candidate engine in process (default); "
        'api: the placement REST app on SQLite (slow); memory: a flat '
        'table (hosts without devices)',
    )
    sim.add_argument(
        '--samples', type=int, default=10, help='rows over simulated time'
    )
    sim.add_argument('--format', choices=['table', 'json'], default='table')
    sim.add_argument(
        '--write-trace', metavar='FILE', help='save the (generated) trace'
    )
    sim.set_defaults(func=_simulate)
