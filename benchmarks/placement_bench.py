"""Benchmark any Placement-compatible endpoint (Nimbus or OpenStack).

Populates N compute nodes over REST (VCPU 32 ratio 16, MEMORY_MB 131072,
DISK_GB 2000; HW_CPU_X86_AVX2 on every 3rd, CUSTOM_FAST_DISK on every 5th;
every 2nd in one of 10 aggregates; every 10th with two CUSTOM_PGPU:4
children) with a thread pool, then times four GET /allocation_candidates
queries (median and p95).

    placement_bench.py --url http://127.0.0.1:8778 --providers 5000 \
        [--json out.json] [--compare-openstack-placement]

``--url`` may be omitted: nimbus-placement-api is then started as a
subprocess on a fresh SQLite database (``--db-url`` to pick another). With
``--compare-openstack-placement`` the same load runs against OpenStack
Placement 16.0.0 installed into a throwaway venv under /tmp and served on
a fresh database of the same engine; the ratios are printed.
"""

import argparse
import concurrent.futures
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid as uuidlib

import requests

HEADERS = {'x-auth-token': 'admin', 'x-roles': 'admin,service',
           'openstack-api-version': 'placement 1.39',
           'content-type': 'application/json', 'accept': 'application/json'}
QUERIES = {
    'plain': 'resources=VCPU:2,MEMORY_MB:4096,DISK_GB:20',
    'plain_limit_1000': 'resources=VCPU:2,MEMORY_MB:4096,DISK_GB:20'
                        '&limit=1000',
    'traits': 'resources=VCPU:2,MEMORY_MB:4096,DISK_GB:20'
              '&required=HW_CPU_X86_AVX2,CUSTOM_FAST_DISK',
    'granular': 'resources1=CUSTOM_PGPU:1&limit=50',
}
AGGREGATES = [str(uuidlib.UUID(int=0xa66 << 64 | i)) for i in range(10)]
_local = threading.local()


def _session():
    s = getattr(_local, 'session', None)
    if s is None:
        s = _local.session = requests.Session()
        s.trust_env = False  # proxy lookups per request cost client CPU
        s.headers.update(HEADERS)
    return s


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
            resp = _session().request(method, self.url + path, json=body,
                                      timeout=300)
            if resp.status_code != 500:
                break
            with self._lock:
                self.retries += 1
            time.sleep(0.01 * (attempt + 1))
        with self._lock:
            self.requests += 1
        if resp.status_code not in ok:
            raise RuntimeError('%s %s -> %s %s' % (method, path,
                                                   resp.status_code,
                                                   resp.text[:300]))
        return resp


def _provider(client, uuid, name, parent=None):
    body = {'uuid': uuid, 'name': name}
    if parent:
        body['parent_provider_uuid'] = parent
    client.call('POST', '/resource_providers', body)


def populate_one(client, i):
    """One compute node (and its PGPU children) over REST."""
    uuid = str(uuidlib.UUID(int=0xc0 << 96 | i))
    _provider(client, uuid, 'cn%06d' % i)
    client.call('PUT', '/resource_providers/%s/inventories' % uuid, {
        'resource_provider_generation': 0,
        'inventories': {
            'VCPU': {'total': 32, 'allocation_ratio': 16.0},
            'MEMORY_MB': {'total': 131072},
            'DISK_GB': {'total': 2000}}})
    gen = 1
    traits = []
    if i % 3 == 0:
        traits.append('HW_CPU_X86_AVX2')
    if i % 5 == 0:
        traits.append('CUSTOM_FAST_DISK')
    if traits:
        client.call('PUT', '/resource_providers/%s/traits' % uuid,
                    {'traits': traits, 'resource_provider_generation': gen})
        gen += 1
    if i % 2 == 0:
        client.call('PUT', '/resource_providers/%s/aggregates' % uuid,
                    {'aggregates': [AGGREGATES[(i // 2) % 10]],
                     'resource_provider_generation': gen})
    if i % 10 == 0:
        for k in range(2):
            child = str(uuidlib.UUID(int=0xc1 << 96 | i << 8 | k))
            _provider(client, child, 'cn%06d-pgpu%d' % (i, k), uuid)
            client.call('PUT', '/resource_providers/%s/inventories' % child,
                        {'resource_provider_generation': 0,
                         'inventories': {'CUSTOM_PGPU': {'total': 4}}})


def populate(client, n, threads):
    client.call('PUT', '/traits/CUSTOM_FAST_DISK')
    client.call('PUT', '/resource_classes/CUSTOM_PGPU')
    start = time.perf_counter()
    before = client.requests
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        for fut in concurrent.futures.as_completed(
                [pool.submit(populate_one, client, i) for i in range(n)]):
            fut.result()
    elapsed = time.perf_counter() - start
    return (client.requests - before) / elapsed, elapsed


def time_queries(client, repeat):
    out = {}
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
        out[name] = {'median_ms': round(statistics.median(times), 2),
                     'p95_ms': round(p95, 2), 'candidates': count}
    return out


def run(url, n, threads, repeat, label):
    client = Client(url)
    rate, elapsed = populate(client, n, threads)
    print('[%s] populated %d compute nodes: %d requests in %.1fs = %.0f '
          'req/s (%d retried 500s)' % (label, n, client.requests, elapsed,
                                       rate, client.retries), flush=True)
    queries = time_queries(client, repeat)
    for name, q in queries.items():
        print('[%s] %-17s median %8.1f ms  p95 %8.1f ms  candidates %d' % (
            label, name, q['median_ms'], q['p95_ms'], q['candidates']),
            flush=True)
    return {'providers': n, 'populate_requests_per_s': round(rate, 1),
            'queries': queries}


def serve_nimbus(db_url, threads, workdir):
    """Start nimbus-placement-api in a subprocess; returns (url, stop)."""
    import socket
    import subprocess
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
    conf = os.path.join(workdir, 'nimbus.conf')
    with open(conf, 'w') as f:
        f.write('[api]\nauth_strategy = noauth2\n[wsgi]\nserver_threads = %d\n'
                '[placement_database]\nconnection = %s\n' % (threads, db_url))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    log = open(os.path.join(workdir, 'nimbus-placement.log'), 'w')
    proc = subprocess.Popen(
        [sys.executable, '-m', 'nimbus.cmd.placement_api', '--config-file',
         conf, '--host', '127.0.0.1', '--port', str(port)], cwd=root,
        stdout=log, stderr=subprocess.STDOUT)
    url = 'http://127.0.0.1:%d' % port
    deadline = time.time() + 60
    while True:
        try:
            if requests.get(url + '/', timeout=2).status_code == 200:
                break
        except requests.RequestException:
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError('nimbus-placement-api did not start, see '
                                   '%s' % log.name)
            time.sleep(0.2)

    def stop():
        proc.terminate()
        proc.wait(10)
        log.close()
    return url, stop


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--url', help='Placement endpoint; default: serve Nimbus '
                                 'in-process on a fresh database')
    p.add_argument('--db-url', help='Database for the in-process server(s) '
                                    '(default: fresh SQLite under /tmp)')
    p.add_argument('--providers', type=int, default=1000)
    p.add_argument('--threads', type=int, default=8)
    p.add_argument('--repeat', type=int, default=10)
    p.add_argument('--json', help='Write the figures to this file')
    p.add_argument('--compare-openstack-placement', action='store_true')
    args = p.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix='placement-bench-')
    stop = None
    url = args.url
    if not url:
        db_url = args.db_url or 'sqlite:///%s/nimbus.sqlite' % workdir
        url, stop = serve_nimbus(db_url, max(16, args.threads * 2), workdir)
    try:
        result = run(url, args.providers, args.threads, args.repeat,
                     'nimbus')
    finally:
        if stop:
            stop()
    if args.compare_openstack_placement:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import openstack_placement
        other = openstack_placement.compare(args, workdir, run)
        if other is not None:
            result['openstack_placement'] = other
            ratios = {}
            for name, q in result['queries'].items():
                theirs = other['queries'][name]['median_ms']
                ratios[name] = round(theirs / q['median_ms'], 1)
                print('ratio %-17s %6.1fx faster (%.1f ms vs %.1f ms)' % (
                    name, ratios[name], q['median_ms'], theirs))
            ratios['populate'] = round(result['populate_requests_per_s'] /
                                       other['populate_requests_per_s'], 1)
            print('ratio populate          %6.1fx faster' %
                  ratios['populate'])
            result['ratios'] = ratios
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == '__main__':
    sys.exit(main())
