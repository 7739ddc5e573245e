"""Benchmark any Placement-compatible endpoint (Nimbus or OpenStack).

Populates N compute nodes over REST (VCPU 32 ratio 16, MEMORY_MB 131072,
DISK_GB 2000; HW_CPU_X86_AVX2 on every 3rd, CUSTOM_FAST_DISK on every 5th;
every 2nd in one of 10 aggregates; every 10th with two CUSTOM_PGPU:4
children) with a thread pool, then times four GET /allocation_candidates
queries (median and p95 of requests in a row; and the median of requests
each right after an allocation write, which no server can answer from what
it kept of the previous one).

    placement_bench.py --url http://127.0.0.1:8778 --providers 5000 \
        [--json out.json] [--compare-openstack-placement]

``--url`` may be omitted: nimbus-placement-api is then started as a
subprocess on a fresh SQLite database, or on ``--db-url``: a MariaDB/MySQL
or PostgreSQL URL names a database the bench creates (it must not exist)
and drops afterwards (``--keep-db`` keeps it); a SQLite URL names a file.
With ``--compare-openstack-placement`` the same load runs against OpenStack
Placement 16.0.0 and the ratios are printed. It is installed into a fresh
temporary venv removed afterwards, or into ``--openstack-venv DIR``, which
is kept and reused by later runs (the install takes about a minute). It is
served on ``--compare-db-url`` when given (created and dropped like
``--db-url``), else on a fresh database of the same engine as Nimbus
(``<name>_openstack`` on the same server), else (with ``--url``) on a fresh
SQLite file. On SQLite OpenStack Placement answers "database is locked" to
concurrent writers, so it is populated with ``--openstack-threads``
(default 1 there) and the output says so.

``--reuse`` skips the populate when the database already holds the N
compute nodes (a SQLite file populated once, e.g. for N=50000);
``--populate-direct`` populates Nimbus through
``nimbus.placement.direct.PlacementDirect`` (the same REST API in this
process, without HTTP). The JSON records which populate was used, the run
conditions and the load average at the start and end of each run.
"""

import argparse
import concurrent.futures
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid as uuidlib

import requests

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proc_cpu  # noqa: E402

HEADERS = {
    'x-auth-token': 'admin',
    'x-roles': 'admin,service',
    'openstack-api-version': 'placement 1.39',
    'content-type': 'application/json',
    'accept': 'application/json',
}
QUERIES = {
    'plain': 'resources=VCPU:2,MEMORY_MB:4096,DISK_GB:20',
    'plain_limit_1000': 'resources=VCPU:2,MEMORY_MB:4096,DISK_GB:20'
    '&limit=1000',
    'traits': 'resources=VCPU:2,MEMORY_MB:4096,DISK_GB:20'
    '&required=HW_CPU_X86_AVX2,CUSTOM_FAST_DISK',
    'granular': 'resources1=CUSTOM_PGPU:1&limit=50',
}
AGGREGATES = [str(uuidlib.UUID(int=0xA66 << 64 | i)) for i in range(10)]
_local = threading.local()


class Response:
    """What the bench reads of an answer (the shape of requests')."""

    def __init__(self, status_code, body):
        self.status_code = status_code
        self.content = body

    @property
    def text(self):
        return self.content.decode('utf-8', 'replace')

    def json(self):
        return json.loads(self.content)


def _connection(netloc):
    """This thread's keep-alive connection to ``netloc``. A plain
    http.client connection: the client shares the machine with the server
    under test, and requests' per-call overhead (hooks, cookie jar,
    adapters) took CPU from the server, more so the faster it answers."""
    conns = getattr(_local, 'conns', None)
    if conns is None:
        conns = _local.conns = {}
    conn = conns.get(netloc)
    if conn is None:
        conn = conns[netloc] = http.client.HTTPConnection(netloc, timeout=300)
    return conn


def request(url, method, path, body=None):
    """One HTTP request on this thread's keep-alive connection; reconnects
    once when the server closed it between requests."""
    parts = urllib.parse.urlsplit(url)
    payload = None if body is None else json.dumps(body).encode()
    target = parts.path.rstrip('/') + path
    for attempt in (1, 2):
        conn = _connection(parts.netloc)
        try:
            conn.request(method, target, body=payload, headers=HEADERS)
            resp = conn.getresponse()
            return Response(resp.status, resp.read())
        except (
            http.client.RemoteDisconnected,
            ConnectionResetError,
            BrokenPipeError,
            http.client.CannotSendRequest,
        ):
            conn.close()
            _local.conns.pop(parts.netloc, None)
            if attempt == 2:
                raise


class Client:
    def __init__(self, url):
        self.url = url.rstrip('/')
        self.requests = 0
        self.retries = 0
        self._lock = threading.Lock()

    def call(self, method, path, body=None, ok=(200, 201, 204)):
        # A 500 is retried (OpenStack Placement on SQLite answers "database
        # is locked" under concurrent writers); only successes are counted.
        for attempt in range(20):
            resp = request(self.url, method, path, body)
            if resp.status_code != 500:
                break
            with self._lock:
                self.retries += 1
            time.sleep(0.01 * (attempt + 1))
        with self._lock:
            self.requests += 1
        if resp.status_code not in ok:
            raise RuntimeError(
                '%s %s -> %s %s'
                % (method, path, resp.status_code, resp.text[:300])
            )
        return resp


def _provider(client, uuid, name, parent=None):
    body = {'uuid': uuid, 'name': name}
    if parent:
        body['parent_provider_uuid'] = parent
    client.call('POST', '/resource_providers', body)


def populate_one(client, i):
    """One compute node (and its PGPU children) over REST."""
    uuid = str(uuidlib.UUID(int=0xC0 << 96 | i))
    _provider(client, uuid, 'cn%06d' % i)
    client.call(
        'PUT',
        '/resource_providers/%s/inventories' % uuid,
        {
            'resource_provider_generation': 0,
            'inventories': {
                'VCPU': {'total': 32, 'allocation_ratio': 16.0},
                'MEMORY_MB': {'total': 131072},
                'DISK_GB': {'total': 2000},
            },
        },
    )
    gen = 1
    traits = []
    if i % 3 == 0:
        traits.append('HW_CPU_X86_AVX2')
    if i % 5 == 0:
        traits.append('CUSTOM_FAST_DISK')
    if traits:
        client.call(
            'PUT',
            '/resource_providers/%s/traits' % uuid,
            {'traits': traits, 'resource_provider_generation': gen},
        )
        gen += 1
    if i % 2 == 0:
        client.call(
            'PUT',
            '/resource_providers/%s/aggregates' % uuid,
            {
                'aggregates': [AGGREGATES[(i // 2) % 10]],
                'resource_provider_generation': gen,
            },
        )
    if i % 10 == 0:
        for k in range(2):
            child = str(uuidlib.UUID(int=0xC1 << 96 | i << 8 | k))
            _provider(client, child, 'cn%06d-pgpu%d' % (i, k), uuid)
            client.call(
                'PUT',
                '/resource_providers/%s/inventories' % child,
                {
                    'resource_provider_generation': 0,
                    'inventories': {'CUSTOM_PGPU': {'total': 4}},
                },
            )


def populate(client, n, threads):
    client.call('PUT', '/traits/CUSTOM_FAST_DISK')
    client.call('PUT', '/resource_classes/CUSTOM_PGPU')
    start = time.perf_counter()
    before = client.requests
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        for fut in concurrent.futures.as_completed(
            [pool.submit(populate_one, client, i) for i in range(n)]
        ):
            fut.result()
    elapsed = time.perf_counter() - start
    return (client.requests - before) / elapsed, elapsed


def _write_between(client, k):
    """One allocation written and removed again (VCPU:1 on compute node
    ``k``): the data changed, so no server may answer the next query from
    what it kept of the last one."""
    consumer = str(uuidlib.UUID(int=0xB0 << 96 | k))
    rp = str(uuidlib.UUID(int=0xC0 << 96 | (k % 1000)))
    client.call(
        'PUT',
        '/allocations/%s' % consumer,
        {
            'allocations': {rp: {'resources': {'VCPU': 1}}},
            'project_id': 'bench',
            'user_id': 'bench',
            'consumer_generation': None,
            'consumer_type': 'INSTANCE',
        },
    )
    client.call('DELETE', '/allocations/%s' % consumer)


def time_queries(client, repeat):
    """Per query: the median and p95 of ``repeat`` requests in a row (the
    data unchanged between them), and the median of ``repeat`` requests
    each right after an allocation write (``after_write_median_ms``).
    ``repeat`` 0 times none (a populate-only run)."""
    out = {}
    if repeat <= 0:
        return out
    k = 0
    for name, query in QUERIES.items():
        client.call('GET', '/allocation_candidates?' + query)  # warm up
        times, count = [], 0
        for _ in range(repeat):
            t0 = time.perf_counter()
            resp = client.call('GET', '/allocation_candidates?' + query)
            times.append((time.perf_counter() - t0) * 1000)
            count = len(resp.json()['allocation_requests'])
        times.sort()
        p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
        after = []
        for _ in range(repeat):
            _write_between(client, k)
            k += 1
            t0 = time.perf_counter()
            client.call('GET', '/allocation_candidates?' + query)
            after.append((time.perf_counter() - t0) * 1000)
        out[name] = {
            'median_ms': round(statistics.median(times), 2),
            'p95_ms': round(p95, 2),
            'after_write_median_ms': round(statistics.median(after), 2),
            'candidates': count,
        }
    return out


def _loadavg():
    return [round(x, 2) for x in os.getloadavg()]


def _cpu_per_request(before, meters, requests):
    """Milliseconds of CPU per request of each meter since ``before``."""
    out = []
    for start, meter in zip(before, meters, strict=True):
        end = meter() if meter else None
        if start is None or end is None or not requests:
            out.append(None)
        else:
            out.append(round((end - start) * 1000.0 / requests, 3))
    return out


def populated(client, n):
    """True when the last of the N compute nodes already exists."""
    uuid = str(uuidlib.UUID(int=0xC0 << 96 | (n - 1)))
    resp = request(client.url, 'GET', '/resource_providers/%s' % uuid)
    return resp.status_code == 200


def run(
    url,
    n,
    threads,
    repeat,
    label,
    reuse=False,
    populate_client=None,
    server_cpu=None,
    db_cpu=None,
):
    """Populate (unless reused) and time the queries; returns the figures.

    ``populate_client`` (a :class:`Client`-like object) populates instead
    of HTTP to ``url`` (``--populate-direct``). ``server_cpu`` and
    ``db_cpu`` (functions returning CPU seconds so far, or None; see
    :mod:`proc_cpu`) are read before and after the populate: the server's
    and the database server's CPU per populate request.
    """
    out = {
        'providers': n,
        'loadavg_start': _loadavg(),
        'populate_threads': threads,
    }
    client = Client(url)
    if reuse and populated(client, n):
        print(
            '[%s] reusing the %d compute nodes already in the database'
            % (label, n),
            flush=True,
        )
        out.update(populate='reused', populate_requests_per_s=None)
    else:
        writer = populate_client or client
        before = writer.requests
        cpu0 = [f() if f else None for f in (server_cpu, db_cpu)]
        rate, elapsed = populate(writer, n, threads)
        cpu = _cpu_per_request(
            cpu0, (server_cpu, db_cpu), writer.requests - before
        )
        how = (
            'direct (PlacementDirect, no HTTP)'
            if populate_client
            else 'REST over HTTP'
        )
        print(
            '[%s] populated %d compute nodes %s with %d threads: %d '
            'requests in %.1fs = %.0f req/s (%d retried 500s)'
            % (
                label,
                n,
                how,
                threads,
                writer.requests,
                elapsed,
                rate,
                writer.retries,
            ),
            flush=True,
        )
        out.update(
            populate='direct' if populate_client else 'http',
            populate_requests_per_s=round(rate, 1),
            populate_seconds=round(elapsed, 1),
            populate_requests=writer.requests,
            populate_retried_500s=writer.retries,
            populate_server_cpu_ms_per_request=cpu[0],
            populate_db_cpu_ms_per_request=cpu[1],
        )
        if cpu[0] is not None:
            print(
                '[%s] populate CPU per request: server %.3f ms, database '
                'server %s'
                % (
                    label,
                    cpu[0],
                    'n/a' if cpu[1] is None else '%.3f ms' % cpu[1],
                ),
                flush=True,
            )
    queries = time_queries(client, repeat)
    for name, q in queries.items():
        print(
            '[%s] %-17s median %8.1f ms  p95 %8.1f ms  after a write '
            '%8.1f ms  candidates %d'
            % (
                label,
                name,
                q['median_ms'],
                q['p95_ms'],
                q['after_write_median_ms'],
                q['candidates'],
            ),
            flush=True,
        )
    out['queries'] = queries
    out['loadavg_end'] = _loadavg()
    print(
        '[%s] load average %s at start, %s at end'
        % (label, out['loadavg_start'], out['loadavg_end']),
        flush=True,
    )
    return out


class DirectClient(Client):
    """:class:`Client` over ``PlacementDirect`` (one session per thread)."""

    def __init__(self, db_url):
        super().__init__('')
        from nimbus.common import config

        self.conf = config.build_conf([], default_config_files=[])
        self.conf.set_override('connection', db_url, 'placement_database')
        self.conf.set_override('sync_on_startup', False, 'placement_database')
        from nimbus.placement import direct

        self._direct = direct.PlacementDirect(self.conf, microversion='1.39')
        self._app_session = self._direct.__enter__()

    def call(self, method, path, body=None, ok=(200, 201, 204)):
        resp = self._app_session.request(method, path, json=body)
        with self._lock:
            self.requests += 1
        if resp.status_code not in ok:
            raise RuntimeError(
                '%s %s -> %s %s'
                % (method, path, resp.status_code, resp.text[:300])
            )
        return resp


def create_database(url):
    """Create the (non-SQLite) database ``url`` names; returns a function
    dropping it."""
    import sqlalchemy as sa
    from nimbus.common import db as common_db

    url = sa.engine.make_url(common_db.normalize_url(url))
    name = url.database
    admin = url.set(
        database='postgres'
        if url.get_backend_name() == 'postgresql'
        else 'mysql'
    )
    engine = sa.create_engine(admin, isolation_level='AUTOCOMMIT')
    extra = (
        ' CHARACTER SET utf8mb4' if url.get_backend_name() == 'mysql' else ''
    )
    with engine.connect() as conn:
        conn.exec_driver_sql('CREATE DATABASE %s%s' % (name, extra))

    def drop():
        with engine.connect() as conn:
            conn.exec_driver_sql('DROP DATABASE IF EXISTS %s' % name)
        engine.dispose()

    return drop


def conditions(args, db_url):
    """What the JSON records about the run."""
    import platform
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        commit = subprocess.run(
            ['git', 'rev-parse', '--short', 'HEAD'],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {
        'database': db_url.split(':', 1)[0] if db_url else 'external',
        'threads': args.threads,
        'repeat': args.repeat,
        'cpus': os.cpu_count(),
        'python': platform.python_version(),
        'commit': commit,
        'started': time.strftime('%Y-%m-%dT%H:%M:%S%z'),
    }


def serve_nimbus(db_url, threads, workdir):
    """Start nimbus-placement-api in a subprocess; returns (url, stop)."""
    import socket
    import subprocess

    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
    conf = os.path.join(workdir, 'nimbus.conf')
    with open(conf, 'w') as f:
        f.write(
            '[api]\nauth_strategy = noauth2\n[wsgi]\nserver_threads = %d\n'
            '[placement_database]\nconnection = %s\n' % (threads, db_url)
        )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    log = open(os.path.join(workdir, 'nimbus-placement.log'), 'w')
    proc = subprocess.Popen(
        [
            sys.executable,
            '-m',
            'nimbus.cmd.placement_api',
            '--config-file',
            conf,
            '--host',
            '127.0.0.1',
            '--port',
            str(port),
        ],
        cwd=root,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = 'http://127.0.0.1:%d' % port
    deadline = time.time() + 60
    while True:
        try:
            if requests.get(url + '/', timeout=2).status_code == 200:
                break
        except requests.RequestException as exc:
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(
                    'nimbus-placement-api did not start, see %s' % log.name
                ) from exc
            time.sleep(0.2)

    def stop():
        # On a machine at load 20 the server took over 10 s to exit.
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()

    return url, stop, proc.pid


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        '--url',
        help='Placement endpoint; default: serve Nimbus '
        'in a subprocess on a fresh database',
    )
    p.add_argument(
        '--db-url',
        help='Database of the Nimbus server started '
        'here (default: fresh SQLite under '
        '/tmp); see the module docstring',
    )
    p.add_argument(
        '--keep-db',
        action='store_true',
        help='Do not drop the MariaDB/PostgreSQL databases',
    )
    p.add_argument(
        '--reuse',
        action='store_true',
        help='Skip the populate when the database already holds '
        'the N compute nodes',
    )
    p.add_argument(
        '--populate-direct',
        action='store_true',
        help='Populate Nimbus through PlacementDirect (REST API '
        'in process, no HTTP)',
    )
    p.add_argument('--providers', type=int, default=1000)
    p.add_argument(
        '--threads',
        type=int,
        default=8,
        help='client threads populating (default 8)',
    )
    p.add_argument(
        '--server-threads',
        type=int,
        default=4,
        help='WSGI threads of each server the bench starts, '
        'Nimbus and OpenStack Placement alike (both are '
        'Python under one GIL: on 2 cores a few threads '
        'serve more requests than many; default 4)',
    )
    p.add_argument(
        '--openstack-threads',
        type=int,
        help='Populate threads for OpenStack Placement (default: '
        '--threads; 1 on SQLite)',
    )
    p.add_argument('--repeat', type=int, default=10)
    p.add_argument('--json', help='Write the figures to this file')
    p.add_argument('--compare-openstack-placement', action='store_true')
    p.add_argument(
        '--openstack-venv',
        metavar='DIR',
        help='Venv for OpenStack Placement 16.0.0: created if '
        'missing, reused if complete, kept afterwards '
        '(default: a temporary venv removed at the end)',
    )
    p.add_argument(
        '--compare-db-url',
        metavar='URL',
        help='Database for OpenStack Placement (a new one: it is '
        'created and dropped unless --keep-db); default: '
        'the Nimbus engine, or SQLite with --url',
    )
    args = p.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix='placement-bench-')
    db_url = (
        None
        if args.url
        else (args.db_url or 'sqlite:///%s/nimbus.sqlite' % workdir)
    )
    result = {'conditions': conditions(args, db_url)}
    drop = stop = None
    server_pids = []
    try:
        url = args.url
        if not url:
            if not db_url.startswith('sqlite'):
                drop = create_database(db_url)
            url, stop, pid = serve_nimbus(db_url, args.server_threads, workdir)
            server_pids.append(pid)
        direct = DirectClient(db_url) if args.populate_direct else None
        result.update(
            run(
                url,
                args.providers,
                args.threads,
                args.repeat,
                'nimbus',
                reuse=args.reuse,
                populate_client=direct,
                server_cpu=None if direct else proc_cpu.cpu_meter(server_pids),
                db_cpu=proc_cpu.cpu_meter(proc_cpu.database_pids(db_url)),
            )
        )
        if stop is not None:
            stop()  # Nimbus is idle while OpenStack Placement runs
            stop = None
        if args.compare_openstack_placement:
            compare(args, db_url, workdir, result)
    finally:
        if stop is not None:
            stop()
        if drop is not None and not args.keep_db:
            drop()
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(result, f, indent=2)
    return 0


def compare(args, db_url, workdir, result):
    """Run the same load on OpenStack Placement; print and record ratios."""
    import openstack_placement

    threads = args.openstack_threads
    os_url = args.compare_db_url
    if os_url is None:
        if not db_url or db_url.startswith('sqlite'):
            os_url = 'sqlite:///%s/openstack.sqlite' % workdir
        else:
            os_url = db_url + '_openstack'
    sqlite = os_url.startswith('sqlite')
    if threads is None:
        threads = 1 if sqlite else args.threads
    if sqlite and threads < args.threads:
        print(
            'NOTE: OpenStack Placement on SQLite answers "database is '
            'locked" to concurrent writers; it is populated with %d '
            'thread(s) (Nimbus: %d), so the populate ratio compares '
            'unequal concurrency.' % (threads, args.threads),
            flush=True,
        )
    drop = None if sqlite else create_database(os_url)
    try:
        other = openstack_placement.compare(args, os_url, threads, run)
    finally:
        if drop is not None and not args.keep_db:
            drop()
    if other is None:
        return
    other['database'] = os_url.split(':', 1)[0]
    result['openstack_placement'] = other
    ratios = {}
    for name, q in result['queries'].items():
        theirs = other['queries'][name]['median_ms']
        ratios[name] = round(theirs / q['median_ms'], 1)
        print(
            'ratio %-17s %6.1fx faster (%.1f ms vs %.1f ms)'
            % (name, ratios[name], q['median_ms'], theirs)
        )
    for name, q in result['queries'].items():
        theirs = other['queries'][name].get('after_write_median_ms')
        if theirs:
            key = name + '_after_write'
            ratios[key] = round(theirs / q['after_write_median_ms'], 1)
            print(
                'ratio %-17s %6.1fx faster after a write (%.1f ms vs %.1f ms)'
                % (name, ratios[key], q['after_write_median_ms'], theirs)
            )
    if result.get('populate_requests_per_s') and other.get(
        'populate_requests_per_s'
    ):
        ratios['populate'] = round(
            result['populate_requests_per_s']
            / other['populate_requests_per_s'],
            1,
        )
        print(
            'ratio populate          %6.1fx faster (%.0f vs %.0f req/s, '
            '%d vs %d threads)'
            % (
                ratios['populate'],
                result['populate_requests_per_s'],
                other['populate_requests_per_s'],
                args.threads,
                threads,
            )
        )
    for key, what in (
        ('populate_server_cpu_ms_per_request', 'server CPU'),
        ('populate_db_cpu_ms_per_request', 'database server CPU'),
    ):
        ours, theirs = result.get(key), other.get(key)
        if ours and theirs:
            name = 'populate_' + key.split('_')[1] + '_cpu'
            ratios[name] = round(theirs / ours, 1)
            print(
                'ratio %-17s %6.1fx less %s per request (%.3f vs %.3f ms)'
                % (name, ratios[name], what, ours, theirs)
            )
    result['ratios'] = ratios


if __name__ == '__main__':
    sys.exit(main())
