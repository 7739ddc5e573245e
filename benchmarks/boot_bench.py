"""Boots per second through the REST API, from request to ACTIVE.

Daemons as separate processes on RabbitMQ (fresh vhosts) and MariaDB
(fresh databases): nimbus-api, nimbus-placement-api, the super conductor,
the scheduler, two cells each with its conductor and one nimbus-compute
process simulating half of ``--hosts``. With ``--all-in-one`` the same
load goes to ``nimbus all-in-one --hosts N`` (in-process bus, SQLite).

Phases:

- for each ``--rates`` R: boot ``R * --duration`` servers at R requests
  per second (a pool of client threads keeps the pace), and report the
  sustained rate (servers ACTIVE per second from the first request to the
  last ACTIVE), p50/p99 seconds from request to ACTIVE, errors, and the CPU
  seconds each daemon spent;
- a ``--multi``-instance multi-create: seconds until all are ACTIVE.

Before the first rate the cloud idles ``--idle`` seconds with the watcher
running: the CPU each daemon spends then (heartbeats, resource reports,
the watcher's polling) is the background, reported per second and taken
out of each rate's figures to give the CPU milliseconds one boot costs in
each daemon. ``--profile DIR`` runs ``py-spy record`` (when installed) on
every daemon during each rate and writes ``<daemon>-<rate>.txt``
(collapsed stacks) and a summary of the top functions per daemon.

A watcher lists ``GET /servers/detail?changes-since=...`` every 0.2 s and
notes when each server is first seen ACTIVE or ERROR, so the time to ACTIVE
is accurate to about 0.2 s. The figures depend on how loaded the machine
is: run it on a quiet one.

    .venv/bin/python benchmarks/boot_bench.py [--hosts 1000]
        [--rates 25 50 100] [--duration 10] [--multi 1000]
        [--idle 10] [--profile DIR] [--database mysql|postgresql]
        [--placement-results N] [--option SECTION.NAME=VALUE ...]
        [--all-in-one] [--json FILE] [--max-cpu-ms N]

``--max-cpu-ms N`` makes the run exit 1 when a rate's CPU per boot, summed
over the daemons (less the idle background), is over N milliseconds: a
benchmark's gate for a quiet machine, not a test.
"""

import argparse
import collections
import concurrent.futures
import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

import psutil

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# harness/ (the soak run's load) is not installed: import it from the
# checkout this benchmark belongs to.
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import nova_cloud  # noqa: E402  (benchmarks/nova_cloud.py)
import stacks  # noqa: E402  (benchmarks/stacks.py)

from nimbus.allinone.client import ComputeClient
from nimbus.testing import daemons
from nimbus.testing import infra
from harness import soak_run


class _Unavailable(Exception):
    pass


class Watcher(threading.Thread):
    """Notes the first time each server is seen ACTIVE or ERROR."""

    def __init__(self, api, interval=0.2):
        super().__init__(daemon=True)
        self.api = api
        self.interval = interval
        self.done = {}  # uuid -> (status, monotonic time, name, host)
        self._halt = threading.Event()
        self._lock = threading.Lock()

    # A row's updated_at is stamped before its transaction commits; under
    # a multi-create the commit can come seconds later, after a poll whose
    # window had already passed the stamp. Each poll looks 2 s further back
    # than the last one; every WIDE-th looks 30 s back, so such a row is
    # seen late (by up to WIDE polls) instead of never.
    WIDE = 25

    def run(self):
        since = datetime.datetime.now(datetime.timezone.utc)
        polls = 0
        while not self._halt.wait(self.interval):
            now = datetime.datetime.now(datetime.timezone.utc)
            polls += 1
            back = 30 if polls % self.WIDE == 0 else 2
            stamp = (since - datetime.timedelta(seconds=back)).strftime(
                '%Y-%m-%dT%H:%M:%SZ'
            )
            try:
                servers = self.api.get(
                    '/servers/detail',
                    params={'changes-since': stamp, 'limit': 100000},
                )['servers']
            except Exception as exc:  # keep watching through a hiccup
                print('watcher: %s' % exc, file=sys.stderr)
                continue
            seen = time.monotonic()
            with self._lock:
                for server in servers:
                    if (
                        server['status'] in ('ACTIVE', 'ERROR')
                        and server['id'] not in self.done
                    ):
                        self.done[server['id']] = (
                            server['status'],
                            seen,
                            server['name'],
                            server.get('OS-EXT-SRV-ATTR:host'),
                        )
            since = now

    def stop(self):
        self._halt.set()
        self.join()

    def finished(self, uuids):
        with self._lock:
            return {u: self.done[u] for u in uuids if u in self.done}

    def named(self, prefix):
        with self._lock:
            return {
                u: d for u, d in self.done.items() if d[2].startswith(prefix)
            }


def spread(active, hosts):
    """How evenly the ACTIVE servers of one phase landed: hosts used,
    the most and fewest on one host (hosts left empty count as 0), and
    what an even spread would put on each."""
    per_host = collections.Counter(d[3] for d in active if d[3])
    counts = list(per_host.values()) + [0] * max(0, hosts - len(per_host))
    return {
        'hosts_used': len(per_host),
        'max_per_host': max(counts, default=0),
        'min_per_host': min(counts, default=0),
        'even_per_host': round(len(active) / hosts, 1) if hosts else None,
    }


def _spread_line(row):
    s = row['spread']
    return '    spread: %d hosts used, %d to %d per host (even: %s)' % (
        s['hosts_used'],
        s['min_per_host'],
        s['max_per_host'],
        s['even_per_host'],
    )


def _percentile(values, fraction):
    values = sorted(values)
    if not values:
        return None
    return values[min(len(values) - 1, int(fraction * len(values)))]


def _cpu(processes):
    """CPU seconds each daemon has spent, its worker processes included
    (nova-conductor and nova-scheduler fork theirs)."""
    out = {}
    for name, pid in processes.items():
        try:
            parent = psutil.Process(pid)
            family = [parent] + parent.children(recursive=True)
        except psutil.Error:
            out[name] = 0.0
            continue
        total = 0.0
        for proc in family:
            try:
                times = proc.cpu_times()
            except psutil.Error:
                continue
            total += times.user + times.system
        out[name] = total
    return out


def run_idle(seconds, processes):
    """CPU seconds per second each daemon spends with no boot running."""
    before = _cpu(processes)
    began = time.monotonic()
    time.sleep(seconds)
    after = _cpu(processes)
    elapsed = time.monotonic() - began
    return {
        name: round((after[name] - before[name]) / elapsed, 3)
        for name in processes
    }


def per_boot(cpu_s, background, elapsed, boots):
    """CPU ms one boot costs in each daemon: the phase's CPU less the
    background rate over the phase, over the boots that went ACTIVE."""
    if not boots:
        return {}
    return {
        name: round(
            max(0.0, cpu_s[name] - background.get(name, 0.0) * elapsed)
            * 1000
            / boots,
            1,
        )
        for name in cpu_s
    }


def run_rate(
    api,
    watcher,
    flavor,
    image,
    rate,
    duration,
    processes,
    timeout,
    background=None,
    profile=None,
    hosts=0,
):
    count = max(1, int(rate * duration))
    submitted = {}
    errors = []
    recorders = stacks.record(processes, profile, str(rate))
    cpu_before = _cpu(processes)
    began = time.monotonic()

    def boot(index):
        at = began + index / rate
        delay = at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        sent = time.monotonic()
        try:
            body = api.create_server('r%d-%05d' % (rate, index), flavor, image)
            submitted[body['server']['id']] = sent
        except Exception as exc:
            errors.append(str(exc)[:200])

    workers = min(64, max(4, rate))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        list(pool.map(boot, range(count)))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(watcher.finished(submitted)) == len(submitted):
            break
        time.sleep(0.2)
    done = watcher.finished(submitted)
    active = {u: d for u, d in done.items() if d[0] == 'ACTIVE'}
    latencies = [d[1] - submitted[u] for u, d in active.items()]
    placed = spread(active.values(), hosts)
    last = max((d[1] for d in active.values()), default=began)
    cpu_after = _cpu(processes)
    elapsed = time.monotonic() - began
    stacks.finish(recorders)
    cpu_s = {
        name: round(cpu_after[name] - cpu_before[name], 1)
        for name in processes
    }
    return {
        'offered_per_s': rate,
        'requests': count,
        'accepted': len(submitted),
        'request_errors': len(errors),
        'active': len(active),
        'error': sum(1 for d in done.values() if d[0] == 'ERROR'),
        'unfinished': len(submitted) - len(done),
        'sustained_active_per_s': round(
            len(active) / max(last - began, 1e-9), 1
        ),
        'p50_s': round(_percentile(latencies, 0.5) or 0, 2),
        'p99_s': round(_percentile(latencies, 0.99) or 0, 2),
        'elapsed_s': round(elapsed, 1),
        'spread': placed,
        'cpu_s': cpu_s,
        'cpu_ms_per_boot': per_boot(
            cpu_s, background or {}, elapsed, len(active)
        ),
    }


def run_multi(
    api,
    watcher,
    flavor,
    image,
    count,
    processes,
    timeout,
    profile=None,
    hosts=0,
):
    recorders = stacks.record(processes, profile, 'multi')
    cpu_before = _cpu(processes)
    began = time.monotonic()
    api.create_server('mc', flavor, image, min_count=count, max_count=count)
    accepted = time.monotonic() - began
    deadline = began + timeout
    while time.monotonic() < deadline:
        if len(watcher.named('mc-')) >= count:
            break
        time.sleep(0.2)
    done = watcher.named('mc-')
    active = [d for d in done.values() if d[0] == 'ACTIVE']
    cpu_after = _cpu(processes)
    stacks.finish(recorders)
    times = [d[1] for d in active]
    return {
        'instances': count,
        'request_s': round(accepted, 2),
        'active': len(active),
        'error': sum(1 for d in done.values() if d[0] == 'ERROR'),
        'spread': spread(active, hosts),
        'first_active_s': round(min(times) - began, 1) if times else None,
        'half_active_s': round(_percentile(times, 0.5) - began, 1)
        if times
        else None,
        'all_active_s': round(
            max((d[1] for d in active), default=began) - began, 1
        )
        if len(active) == count
        else None,
        'cpu_s': {
            name: round(cpu_after[name] - cpu_before[name], 1)
            for name in processes
        },
    }


def _listing(values, fmt='%.1f'):
    return ', '.join(
        ('%s ' + fmt) % kv
        for kv in sorted(values.items(), key=lambda kv: -kv[1])
    )


def _wait_hosts(api, count, timeout, running=()):
    def up():
        hypervisors = api.get('/os-hypervisors/detail')['hypervisors']
        return len([h for h in hypervisors if h.get('state') == 'up']) >= count

    daemons.wait_for(up, timeout, '%d hosts to report' % count, running)


def _options(placement_results=None, extra=None):
    """The cloud's common options; ``placement_results``: the scheduler's
    ``max_placement_results`` (placement shuffling its candidates, as
    Nova's guidance for large clouds pairs them), else the default;
    ``extra``: ``{section: {name: value}}`` set in every daemon."""
    options = {
        'DEFAULT': {'report_interval': 10, 'service_down_time': 60},
        'api': {'max_instances_per_request': 10000},
    }
    if placement_results:
        options['scheduler'] = {'max_placement_results': placement_results}
        options['placement'] = {'randomize_allocation_candidates': 'true'}
    for section, values in (extra or {}).items():
        options.setdefault(section, {}).update(values)
    return options


def daemon_cloud(
    workdir,
    hosts,
    cleanups,
    database='mysql',
    placement_results=None,
    options=None,
):
    def fresh(make):
        try:
            url, cleanup = make()
        except BaseException as exc:  # pytest's skip outside pytest
            raise _Unavailable(str(exc)) from exc
        cleanups.append(cleanup)
        return url

    api_bus, bus1, bus2 = (fresh(infra.rabbit_vhost) for _ in range(3))
    databases = {
        name: fresh(lambda: infra.database(database))
        for name in ('api', 'cell0', 'cell1', 'cell2', 'placement')
    }
    cloud = daemons.DaemonCloud(
        workdir,
        api_bus,
        bus1,
        databases,
        hosts=0,
        more_cells={'cell2': (bus2, databases['cell2'])},
        common_options=_options(placement_results, options),
    )
    # Stopped with the other cleanups (first: they run in reverse), also
    # when the hosts never come up and no cloud is returned.
    cleanups.append(cloud.stop)
    cloud.prepare()
    cloud.start()
    cloud.start_simulated('c1', hosts // 2, cell='cell1')
    cloud.start_simulated('c2', hosts - hosts // 2, cell='cell2')
    api = ComputeClient(cloud.api_url + '/v2.1')
    _wait_hosts(api, hosts, 300, list(cloud.daemons.values()))
    cloud.manage('cell', 'discover-hosts')
    processes = {name: d.process.pid for name, d in cloud.daemons.items()}
    return cloud, api, processes


def all_in_one(workdir, hosts, start_timeout=300):
    port = daemons.free_port()
    log = open(os.path.join(workdir, 'all-in-one.out'), 'w')
    process = subprocess.Popen(
        [
            sys.executable,
            '-m',
            'nimbus.cmd.cli',
            'all-in-one',
            '--hosts',
            str(hosts),
            '--state-dir',
            os.path.join(workdir, 'state'),
            '--api-port',
            str(port),
            '--placement-port',
            '0',
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    api = ComputeClient('http://127.0.0.1:%d/v2.1' % port)

    def answers():
        if process.poll() is not None:
            raise RuntimeError('all-in-one exited')
        try:
            api.get('/flavors')
            return True
        except Exception:
            return False

    try:
        daemons.wait_for(answers, start_timeout, 'all-in-one to answer', [])
        _wait_hosts(api, hosts, start_timeout)
    except BaseException:
        # Not returned to main's cleanup: stopped here (a run that timed
        # out left its all-in-one running).
        process.terminate()
        process.wait(timeout=60)
        raise
    return process, api, {'all-in-one': process.pid}


def run_phases(
    api, processes, args, options=None, image=None, mode=None, quota=True
):
    """The idle window, each rate and the multi-create against the cloud
    behind ``api`` (whose daemons are ``processes``), printed as they go;
    the result. ``image``: an image to boot (else one is made through the
    cloud's image API); ``quota``: lift the project's quotas through
    the API (else the cloud's configuration has)."""
    # Nova's default quotas (10 instances) would cap the load.
    if quota:
        api._call(
            'PUT',
            api.url + '/os-quota-sets/admin',
            json={'quota_set': {'instances': -1, 'cores': -1, 'ram': -1}},
        )
    flavor = api.create_flavor('bench.tiny', 1, 256, 1)['id']
    if image is None:
        image = api.create_image('bench-image')['id']
    watcher = Watcher(api)
    watcher.start()
    result = {
        'mode': mode or ('all-in-one' if args.all_in_one else 'daemons'),
        'hosts': args.hosts,
        'placement_results': args.placement_results,
        'options': options,
        'rates': [],
    }
    background = {}
    if args.idle > 0:
        background = run_idle(args.idle, processes)
        result['idle_cpu_s_per_s'] = background
        print(
            'idle (watcher polling): cpu s per s: %s (total %.2f)'
            % (_listing(background, '%.3f'), sum(background.values())),
            flush=True,
        )
    for rate in args.rates:
        row = run_rate(
            api,
            watcher,
            flavor,
            image,
            rate,
            args.duration,
            processes,
            args.timeout,
            background,
            args.profile,
            args.hosts,
        )
        result['rates'].append(row)
        print(
            'offered %4d/s: %5.1f ACTIVE/s sustained, p50 %.2f s, '
            'p99 %.2f s, %d active, %d error, %d unfinished'
            % (
                rate,
                row['sustained_active_per_s'],
                row['p50_s'],
                row['p99_s'],
                row['active'],
                row['error'],
                row['unfinished'],
            ),
            flush=True,
        )
        print(_spread_line(row), flush=True)
        print('    cpu s: ' + _listing(row['cpu_s']), flush=True)
        if row['cpu_ms_per_boot']:
            print(
                '    cpu ms per boot (less idle): %s (total %.1f)'
                % (
                    _listing(row['cpu_ms_per_boot']),
                    sum(row['cpu_ms_per_boot'].values()),
                ),
                flush=True,
            )
    if args.multi:
        row = run_multi(
            api,
            watcher,
            flavor,
            image,
            args.multi,
            processes,
            args.timeout,
            args.profile,
            args.hosts,
        )
        result['multi_create'] = row
        print(
            'multi-create of %d: request %.2f s, first ACTIVE at %s s, '
            'half at %s s, all ACTIVE in %s s (%d active, %d error)'
            % (
                args.multi,
                row['request_s'],
                row['first_active_s'],
                row['half_active_s'],
                row['all_active_s'],
                row['active'],
                row['error'],
            ),
            flush=True,
        )
        print(_spread_line(row), flush=True)
        print('    cpu s: ' + _listing(row['cpu_s']), flush=True)
    watcher.stop()
    return result


def over_budget(result, max_ms):
    """``[(rate, total ms)]`` of each rate whose CPU per boot, summed over
    the daemons, is over ``max_ms``."""
    over = []
    for row in result.get('rates', ()):
        per_boot = row.get('cpu_ms_per_boot') or {}
        total = sum(per_boot.values())
        if per_boot and total > max_ms:
            over.append((row['offered_per_s'], round(total, 1)))
    return over


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, default=1000)
    parser.add_argument('--rates', type=int, nargs='*', default=[25, 50, 100])
    parser.add_argument('--duration', type=float, default=10.0)
    parser.add_argument('--multi', type=int, default=1000)
    parser.add_argument('--timeout', type=float, default=300.0)
    parser.add_argument(
        '--start-timeout',
        type=float,
        default=300.0,
        help='seconds the all-in-one may take to answer, and again for '
        'its hosts to report',
    )
    parser.add_argument('--all-in-one', action='store_true')
    parser.add_argument(
        '--database', choices=('mysql', 'postgresql'), default='mysql'
    )
    parser.add_argument('--placement-results', type=int)
    parser.add_argument('--idle', type=float, default=10.0)
    parser.add_argument('--profile')
    parser.add_argument('--json')
    parser.add_argument(
        '--max-cpu-ms',
        type=float,
        metavar='N',
        help='exit 1 when a rate costs more than N ms of CPU per boot '
        'over all daemons (less the idle background)',
    )
    parser.add_argument(
        '--option',
        action='append',
        default=[],
        metavar='SECTION.NAME=VALUE',
        help="set an option in every daemon's config (not with "
        '--all-in-one), e.g. scheduler.executor_thread_pool_size=64; '
        'may be repeated',
    )
    parser.add_argument(
        '--compare-nova',
        metavar='VENV',
        help='then run the same phases against OpenStack Nova 34 and '
        'Placement 16 from VENV (benchmarks/nova_cloud.py), with --hosts '
        'nova-compute processes (fake.FakeDriver), and print the ratios',
    )
    parser.add_argument(
        '--nova-option',
        action='append',
        default=[],
        metavar='SECTION.NAME=VALUE',
        help="set an option in Nova's nova.conf, e.g. "
        'filter_scheduler.host_subset_size=10; may be repeated',
    )
    args = parser.parse_args(argv)
    try:
        options = soak_run.parse_options(args.option)
    except ValueError as exc:
        parser.error(str(exc))
    # A SIGTERM (timeout(1), pkill) unwinds through the finally below, so
    # the daemons the run started are stopped too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cleanups = []
    workdir = tempfile.mkdtemp(prefix='nimbus-boot-bench-')
    process = None
    try:
        if args.all_in_one:
            began = time.monotonic()
            process, api, processes = all_in_one(
                workdir, args.hosts, args.start_timeout
            )
            print(
                'all-in-one: %d hosts up in %.0f s'
                % (args.hosts, time.monotonic() - began),
                flush=True,
            )
        else:
            cloud, api, processes = daemon_cloud(
                workdir,
                args.hosts,
                cleanups,
                args.database,
                args.placement_results,
                options,
            )
        result = run_phases(api, processes, args, options)
        result['workdir'] = workdir
        if args.compare_nova:
            result = nova_cloud.compare(args, result, run_phases)
        if args.json:
            with open(args.json, 'w') as f:
                json.dump(result, f, indent=2)
        if args.max_cpu_ms is not None:
            over = over_budget(result, args.max_cpu_ms)
            for rate, total in over:
                print(
                    'offered %d/s: %.1f ms of CPU per boot, over '
                    '--max-cpu-ms %g' % (rate, total, args.max_cpu_ms),
                    flush=True,
                )
            if over:
                return 1
        return 0
    except _Unavailable as exc:
        print('unavailable: %s' % exc, file=sys.stderr)
        return 2
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=60)
        for cleanup in reversed(cleanups):
            cleanup()


if __name__ == '__main__':
    sys.exit(main())
