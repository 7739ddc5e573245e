"""``nimbus simulate``: replay an arrival trace through the real scheduler.

    nimbus simulate --hosts N (--trace FILE | --generate SPEC) [--seed S]
                    [--weighers spread|stack|group.opt=v;...]
                    [--compare A B [--plot DIR] | --sample-percent P...]
                    [--samples K]
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


def side_by_side(results, out):
    """The runs' placement quality (``metrics.quality``) and decision time
    in one table, each against the first run: the speed gain (its median
    decision time over this one's) beside the quality lost."""
    base = None
    width = max(len(name) for name in results)
    out.write(
        'side by side: rejections, mean utilisation over the samples, '
        'm1.xlarge that still fit and instances per host at the end; the '
        "engine's decision time (filters, weighers, selection, claim): "
        'CPU median (the speed gain is its ratio) and wall p95\n'
    )
    out.write(
        '%-*s %7s %6s %6s %6s %7s %9s %6s %5s %9s %8s %4s %7s %8s %8s\n'
        % (
            width,
            'setting',
            'reject',
            'VCPU',
            'RAM',
            'DISK',
            'xl-fit',
            'min/max',
            'stdev',
            'empty',
            'cpu ms',
            'p95 ms',
            'redo',
            'speed',
            'd-reject',
            'd-VCPU',
        )
    )
    for name, result in results.items():
        q, d = result['quality'], result['decision']
        spread = q['per_host']
        if base is None:
            base = (q, d)
        gain = (
            base[1]['cpu_median_ms'] / d['cpu_median_ms']
            if d.get('cpu_median_ms')
            else 0.0
        )
        out.write(
            '%-*s %6.2f%% %5.1f%% %5.1f%% %5.1f%% %7d %4d/%-4d %6.2f %5d '
            '%9.3f %8.3f %4d %6.2fx %+7.2fpp %+7.2fpp\n'
            % (
                width,
                name,
                100 * q['rejection_rate'],
                100 * q['VCPU'],
                100 * q['MEMORY_MB'],
                100 * q['DISK_GB'],
                q['xlarge_fit'],
                spread.get('min', 0),
                spread.get('max', 0),
                spread.get('stdev', 0.0),
                spread.get('empty', 0),
                d.get('cpu_median_ms', 0.0),
                d.get('p95_ms', 0.0),
                d['fallbacks'],
                gain,
                100 * (q['rejection_rate'] - base[0]['rejection_rate']),
                100 * (q['VCPU'] - base[0]['VCPU']),
            )
        )


def _configs(args):
    """(name, weigher setting) per run: --compare's two, --weighers with
    and without each --sample-percent, or --weighers alone."""
    if args.compare and args.sample_percent:
        raise ValueError('--compare and --sample-percent do not go together')
    if args.compare:
        return [(c, c) for c in args.compare]
    runs = [(args.weighers, args.weighers)]
    for pct in args.sample_percent or ():
        if not 1 <= pct <= 100:
            raise ValueError('--sample-percent takes 1 to 100')
        runs.append(
            (
                '%s sampled %d%%' % (args.weighers, pct),
                '%s;filter_scheduler.hosts_to_score_percentage=%d'
                % (args.weighers, pct),
            )
        )
    return runs


def _simulate(args):
    from nimbus.simulator import engine
    from nimbus.simulator import hosts as hosts_mod
    from nimbus.simulator import metrics
    from nimbus.simulator import plot
    from nimbus.simulator import trace as trace_mod

    if args.plot and not (args.compare or args.sample_percent):
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
        runs = _configs(args)
        configs = [name for name, _text in runs]
        settings = [engine.weigher_settings(text) for _name, text in runs]
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
            results[name]['decision'] = sim.timing()
            results[name]['quality'] = metrics.quality(results[name])
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
    if len(results) > 1:
        side_by_side(results, sys.stdout)
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
        '--sample-percent',
        type=int,
        nargs='+',
        metavar='P',
        help='run the trace under --weighers as is and with [filter_scheduler] '
        'hosts_to_score_percentage=P (each P), and print their placement '
        'quality and decision time side by side',
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
