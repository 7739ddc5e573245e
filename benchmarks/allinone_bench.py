"""How fast ``nimbus all-in-one --hosts N`` comes up, what it costs idle,
and how long ``nimbus hosts`` takes against it.

Starts ``nimbus all-in-one --hosts N`` (in-process bus, SQLite, fresh state
directory) as a child process and prints:

- ``ready_s``: seconds from launch until the command prints ``Running;``
  (its cloud started, the flavors and image seeded: the command's "up");
- ``hosts_up_s``: seconds from launch until ``GET /os-hypervisors/detail``
  lists N hypervisors ``up`` (every host's service record heartbeating and
  its compute node written);
- ``idle_cpu_s_per_s``: CPU seconds (user + system, from
  ``/proc/<pid>/stat``) the process spends per wall second over
  ``--idle`` seconds once every host is up, after ``--settle`` seconds;
- ``hosts_s`` / ``hosts_json_s``: wall seconds of ``nimbus hosts`` (the
  table, and ``--format json``), each the best of ``--repeat`` runs, with
  that run's CPU seconds (user + system: on a loaded machine the wall
  time is mostly waiting for a core) and its lines.

The figures depend on the machine's load (printed, ``os.getloadavg``):
run it on a quiet one.

    .venv/bin/python benchmarks/allinone_bench.py [--hosts 1000]
        [--idle 60] [--settle 10] [--repeat 3] [--json FILE]
        [--profile FILE] [--keep]

``--profile FILE`` runs the all-in-one under cProfile (slower; the stats go
to FILE when it stops).
"""

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def free_port():
    import socket

    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def cpu_seconds(pid):
    """utime + stime of ``pid`` (its threads included), in seconds."""
    with open('/proc/%d/stat' % pid) as stat:
        fields = stat.read().rsplit(')', 1)[1].split()
    ticks = os.sysconf('SC_CLK_TCK')
    return (int(fields[11]) + int(fields[12])) / ticks


def _env():
    env = dict(os.environ)
    env['PYTHONPATH'] = ROOT + (
        os.pathsep + env['PYTHONPATH'] if env.get('PYTHONPATH') else ''
    )
    return env


def _hosts_up(api_url):
    response = requests.get(
        api_url + '/v2.1/os-hypervisors/detail',
        headers={'X-Auth-Token': 'admin:admin', 'X-Roles': 'admin'},
        timeout=60,
    )
    response.raise_for_status()
    return len(
        [h for h in response.json()['hypervisors'] if h.get('state') == 'up']
    )


def start(hosts, workdir, profile=None, timeout=600):
    """Launch the all-in-one; return ``(process, api_url, placement_url,
    ready_s, hosts_up_s)``."""
    api_port, placement_port = free_port(), free_port()
    argv = [
        'all-in-one',
        '--hosts',
        str(hosts),
        '--state-dir',
        os.path.join(workdir, 'state'),
        '--api-port',
        str(api_port),
        '--placement-port',
        str(placement_port),
    ]
    if profile:
        cmd = [sys.executable, '-m', 'cProfile', '-o', profile]
        cmd += ['-m', 'nimbus.cmd.cli'] + argv
    else:
        cmd = [sys.executable, '-m', 'nimbus.cmd.cli'] + argv
    out_path = os.path.join(workdir, 'all-in-one.out')
    out = open(out_path, 'w')
    began = time.monotonic()
    process = subprocess.Popen(
        cmd, stdout=out, stderr=subprocess.STDOUT, env=_env(), cwd=workdir
    )
    api_url = 'http://127.0.0.1:%d' % api_port
    placement_url = 'http://127.0.0.1:%d' % placement_port
    ready_s = hosts_up_s = None
    deadline = began + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                'all-in-one exited %s; its output: %s'
                % (process.returncode, open(out_path).read()[-2000:])
            )
        if ready_s is None and 'Running;' in open(out_path).read():
            ready_s = time.monotonic() - began
        if hosts_up_s is None:
            try:
                if _hosts_up(api_url) >= hosts:
                    hosts_up_s = time.monotonic() - began
            except requests.RequestException:
                pass
        if ready_s is not None and hosts_up_s is not None:
            return process, api_url, placement_url, ready_s, hosts_up_s
        time.sleep(0.25)
    process.terminate()
    raise RuntimeError('all-in-one not up within %s s' % timeout)


def idle_cpu(pid, window):
    """CPU seconds per second of ``pid`` over ``window`` seconds."""
    before, began = cpu_seconds(pid), time.monotonic()
    time.sleep(window)
    return (cpu_seconds(pid) - before) / (time.monotonic() - began)


def time_hosts(api_url, placement_url, repeat, json_format=False):
    """Best wall seconds of ``nimbus hosts``, the CPU seconds (user +
    system) of that run, and its output's line count."""
    cmd = [
        sys.executable,
        '-m',
        'nimbus.cmd.cli',
        'hosts',
        '--url',
        api_url + '/v2.1',
        '--placement-url',
        placement_url,
    ]
    if json_format:
        cmd += ['--format', 'json']
    best, cpu, lines = None, None, 0
    env = _env()
    env['COLUMNS'] = '100'
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.monotonic()
        done = subprocess.run(
            cmd, capture_output=True, text=True, env=env, check=True
        )
        wall = time.monotonic() - began
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if best is None or wall < best:
            best = wall
            cpu = (after.ru_utime - before.ru_utime) + (
                after.ru_stime - before.ru_stime
            )
        lines = done.stdout.count('\n')
    return best, cpu, lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, default=1000)
    parser.add_argument('--idle', type=float, default=60.0)
    parser.add_argument('--settle', type=float, default=10.0)
    parser.add_argument('--repeat', type=int, default=3)
    parser.add_argument('--timeout', type=float, default=600.0)
    parser.add_argument('--profile')
    parser.add_argument('--json')
    parser.add_argument(
        '--keep', action='store_true', help='keep the state directory'
    )
    args = parser.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix='nimbus-aio-bench-')
    result = {'hosts': args.hosts, 'load_before': os.getloadavg()}
    process = None
    try:
        process, api_url, placement_url, ready, up = start(
            args.hosts,
            workdir,
            profile=os.path.abspath(args.profile) if args.profile else None,
            timeout=args.timeout,
        )
        result.update(
            ready_s=round(ready, 2),
            hosts_up_s=round(up, 2),
            start_cpu_s=round(cpu_seconds(process.pid), 2),
        )
        print(
            'all-in-one --hosts %d: ready (Running) in %.1f s, %d hosts up '
            'in %.1f s, %.1f CPU s'
            % (args.hosts, ready, args.hosts, up, result['start_cpu_s']),
            flush=True,
        )
        time.sleep(args.settle)
        rate = idle_cpu(process.pid, args.idle)
        result['idle_cpu_s_per_s'] = round(rate, 3)
        result['idle_window_s'] = args.idle
        print(
            'idle: %.3f CPU s per s over %.0f s' % (rate, args.idle),
            flush=True,
        )
        result['hosts_up_after_idle'] = _hosts_up(api_url)
        for key, json_format in (('hosts_s', False), ('hosts_json_s', True)):
            wall, cpu, lines = time_hosts(
                api_url, placement_url, args.repeat, json_format
            )
            result[key] = round(wall, 3)
            result[key.replace('_s', '_cpu_s')] = round(cpu, 3)
            result[key.replace('_s', '_lines')] = lines
            print(
                'nimbus hosts%s: %.2f s, %.2f CPU s (best of %d, %d lines)'
                % (
                    ' --format json' if json_format else '',
                    wall,
                    cpu,
                    args.repeat,
                    lines,
                ),
                flush=True,
            )
        result['load_after'] = os.getloadavg()
        print(
            'hosts up after the idle window: %d; load average before %s, '
            'after %s'
            % (
                result['hosts_up_after_idle'],
                ' '.join('%.2f' % x for x in result['load_before']),
                ' '.join('%.2f' % x for x in result['load_after']),
            )
        )
    finally:
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
        if args.keep:
            print('state kept in %s' % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        with open(args.json, 'w') as out:
            json.dump(result, out, indent=2)
    return 0


if __name__ == '__main__':
    sys.exit(main())
