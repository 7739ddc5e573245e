"""Allocation-candidate throughput under gunicorn with 1, 2 and 4 workers,
Nimbus's placement beside OpenStack Placement 16.0.0 under the same server
and the same worker count, in one run.

    placement_workers_bench.py --providers 2000 --workers 1 2 4 \
        --db-url mysql+pymysql://root@127.0.0.1/ \
        --openstack-venv /tmp/osp16-gunicorn-venv

Each side gets a fresh MariaDB (or PostgreSQL) database on the server
``--db-url`` names, populated once over REST with ``placement_bench``'s
compute nodes (one gunicorn worker). Then, per worker count, gunicorn serves
that side's WSGI app (Nimbus: ``nimbus.wsgi.placement:application``;
OpenStack: ``placement.wsgi.init_application()``) with ``-k gthread
--threads T``, and ``--clients`` client threads (keep-alive connections)
send ``GET /allocation_candidates?<query>`` for ``--duration`` seconds:
requests per second, p50 and p99 latency. The OpenStack venv (Placement,
gunicorn and the database driver) is created when missing and kept.

A benchmark, not a test: it prints figures; nothing asserts a timing.
"""

import argparse
import concurrent.futures
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import requests

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import openstack_placement  # noqa: E402  (benchmarks/openstack_placement.py)
import placement_bench as pb  # noqa: E402  (benchmarks/placement_bench.py)

OSP_APP = (
    'from placement.wsgi import init_application\n'
    'application = init_application()\n'
)


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _gunicorn_of(python):
    return os.path.join(os.path.dirname(python), 'gunicorn')


def ensure_openstack(venv, db_url):
    """OpenStack Placement's venv with gunicorn in it."""
    python = openstack_placement.ensure_venv(venv, db_url)
    if not os.path.exists(_gunicorn_of(python)):
        subprocess.run(
            [python, '-m', 'pip', 'install', '-q', 'gunicorn'], check=True
        )
    return python


class Server:
    """gunicorn serving ``app`` with ``workers`` x ``threads``."""

    def __init__(self, gunicorn, app, workers, threads, env, chdir, log):
        self.port = _free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self._log = open(log, 'a')
        self.proc = subprocess.Popen(
            [
                gunicorn,
                '--workers',
                str(workers),
                '--worker-class',
                'gthread',
                '--threads',
                str(threads),
                '--bind',
                '127.0.0.1:%d' % self.port,
                '--chdir',
                chdir,
                '--timeout',
                '120',
                app,
            ],
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def wait(self, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    'gunicorn exited with %s; see %s'
                    % (self.proc.returncode, self._log.name)
                )
            try:
                if requests.get(self.url + '/', timeout=2).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.3)
        raise RuntimeError('gunicorn did not answer within %d s' % timeout)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._log.close()


def load(url, query, clients, duration, warmup=0.0):
    """``clients`` threads sending the query for ``duration`` seconds:
    requests/s, p50 and p99 ms, and the candidates in one answer. A
    ``warmup`` run first (not counted) reaches every worker, so that each
    has built its caches before the clock starts."""
    if warmup:
        load(url, query, clients, warmup)
    path = '/allocation_candidates?' + query
    stop = time.monotonic() + duration
    times, lock, count = [], threading.Lock(), [0]

    def worker():
        client = pb.Client(url)
        mine = []
        while time.monotonic() < stop:
            t0 = time.perf_counter()
            resp = client.call('GET', path)
            mine.append((time.perf_counter() - t0) * 1000)
            count[0] = len(resp.json()['allocation_requests'])
        with lock:
            times.extend(mine)

    pb.Client(url).call('GET', path)  # warm every cache once
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        for fut in [pool.submit(worker) for _ in range(clients)]:
            fut.result()
    elapsed = time.monotonic() - started
    times.sort()
    return {
        'requests_per_s': round(len(times) / elapsed, 1),
        'p50_ms': round(statistics.median(times), 1),
        'p99_ms': round(times[int(0.99 * (len(times) - 1))], 1),
        'requests': len(times),
        'candidates': count[0],
    }


def side(name, gunicorn, app, env, chdir, args, workdir):
    """Populate once, then measure every worker count."""
    log = os.path.join(workdir, '%s-gunicorn.log' % name)
    server = Server(gunicorn, app, 1, args.threads, env, chdir, log).wait()
    try:
        rate, took = pb.populate(pb.Client(server.url), args.providers, 8)
        print(
            '%s: %d compute nodes populated in %.0f s (%.0f req/s)'
            % (name, args.providers, took, rate),
            flush=True,
        )
    finally:
        server.stop()
    out = {}
    for workers in args.workers:
        server = Server(
            gunicorn, app, workers, args.threads, env, chdir, log
        ).wait()
        try:
            out[workers] = load(
                server.url, pb.QUERIES[args.query], args.clients, args.duration
            )
        finally:
            server.stop()
        print(
            '%s, %d worker(s): %s' % (name, workers, out[workers]), flush=True
        )
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--providers', type=int, default=2000)
    p.add_argument('--workers', type=int, nargs='+', default=[1, 2, 4])
    p.add_argument(
        '--threads',
        type=int,
        default=4,
        help='gunicorn threads per worker (both sides)',
    )
    p.add_argument('--clients', type=int, default=8)
    p.add_argument('--duration', type=float, default=10.0)
    p.add_argument(
        '--warmup',
        type=float,
        default=5.0,
        help='seconds of load before each measurement (every worker warm)',
    )
    p.add_argument(
        '--query', default='plain_limit_1000', choices=sorted(pb.QUERIES)
    )
    p.add_argument(
        '--db-url',
        default='mysql+pymysql://root@127.0.0.1/',
        help='a database server URL (no database name)',
    )
    p.add_argument('--openstack-venv', default='/tmp/osp16-gunicorn-venv')
    p.add_argument('--json')
    args = p.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix='placement-workers-')
    stamp = '%d' % time.time()
    base = args.db_url.rstrip('/')
    nimbus_db = '%s/nimbus_pw_%s' % (base, stamp)
    osp_db = '%s/osp_pw_%s' % (base, stamp)
    drops = [pb.create_database(nimbus_db), pb.create_database(osp_db)]
    result = {'args': vars(args), 'load_start': os.getloadavg()}
    try:
        # Nimbus: migrate once here, so the workers never race to.
        conf = os.path.join(workdir, 'nimbus-placement.conf')
        with open(conf, 'w') as f:
            f.write(
                '[DEFAULT]\ndebug = false\n[api]\nauth_strategy = noauth2\n'
                '[placement_database]\nconnection = %s\n'
                'sync_on_startup = false\n' % nimbus_db
            )
        from nimbus.placement import db as placement_db

        placement_db.sync(nimbus_db)
        nimbus_gunicorn = _gunicorn_of(sys.executable)
        result['nimbus'] = side(
            'nimbus',
            nimbus_gunicorn,
            'nimbus.wsgi.placement:application',
            dict(os.environ, NIMBUS_CONFIG_FILE=conf),
            workdir,
            args,
            workdir,
        )
        python = ensure_openstack(args.openstack_venv, osp_db)
        confdir = os.path.join(workdir, 'openstack')
        os.makedirs(confdir)
        with open(os.path.join(confdir, 'placement.conf'), 'w') as f:
            f.write(
                '[DEFAULT]\ndebug = False\n[api]\nauth_strategy = noauth2\n'
                '[placement_database]\nconnection = %s\n'
                'sync_on_startup = False\n' % osp_db
            )
        with open(os.path.join(confdir, 'osp_app.py'), 'w') as f:
            f.write(OSP_APP)
        subprocess.run(
            [
                os.path.join(os.path.dirname(python), 'placement-manage'),
                '--config-dir',
                confdir,
                'db',
                'sync',
            ],
            check=True,
        )
        result['openstack'] = side(
            'openstack-placement-16',
            _gunicorn_of(python),
            'osp_app:application',
            dict(os.environ, OS_PLACEMENT_CONFIG_DIR=confdir),
            confdir,
            args,
            workdir,
        )
    finally:
        for drop in drops:
            drop()
    result['load_end'] = os.getloadavg()
    print()
    print(
        '| workers | Nimbus req/s (p50 ms) | Placement 16 req/s (p50 ms) '
        '| ratio |'
    )
    print('|---|---|---|---|')
    for workers in args.workers:
        mine, theirs = result['nimbus'][workers], result['openstack'][workers]
        print(
            '| %d | %.0f (%.1f) | %.1f (%.0f) | %.0fx |'
            % (
                workers,
                mine['requests_per_s'],
                mine['p50_ms'],
                theirs['requests_per_s'],
                theirs['p50_ms'],
                mine['requests_per_s'] / max(theirs['requests_per_s'], 1e-9),
            )
        )
    print(
        'load average: %s -> %s'
        % (
            ' '.join('%.1f' % x for x in result['load_start']),
            ' '.join('%.1f' % x for x in result['load_end']),
        )
    )
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == '__main__':
    sys.exit(main())
