#!/usr/bin/env python
"""Dashboard benchmark: what the page costs a cloud of N simulated hosts.

    .venv/bin/python benchmarks/dashboard_bench.py --hosts 1000 \\
        [--servers 500] [--dashboards 8] [--requests 300] [--json FILE]

Starts ``nimbus all-in-one``'s cloud in process (SQLite, in-process bus,
shared simulated hosts, as ``nimbus all-in-one --hosts N``), boots
``--servers`` servers (m1.small, multi-create), then measures:

1. the host snapshot behind the heat map (``snapshot.hosts``: two queries
   per cell and one on the API database), uncached, and ``GET
   /dashboard/api/hosts`` over HTTP with the cache cold and warm;
2. the per-provider alternative it replaces: ``GET /resource_providers``
   then ``GET /resource_providers/{uuid}/usages`` for every provider;
3. the latency of ordinary API requests (``GET /v2.1/flavors/detail`` and
   ``GET /v2.1/servers/detail?limit=20``) with no dashboard open, then with
   ``--dashboards`` pages open, each holding the event stream and polling
   hosts every second and failed builds every two (five times the page's
   own rate); in both phases 20 servers are booted while the requests run,
   so that decisions stream.

``--snapshot-of STATE_DIR`` only times (1) on the SQLite databases a run
left in STATE_DIR (printed at its start), with no cloud running: the
snapshot's own cost without the services' load around it.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time

import requests

from nimbus.allinone import client as client_mod
from nimbus.allinone import cloud as cloud_mod
from nimbus.allinone import demo
from nimbus.api.dashboard import snapshot
from nimbus.messaging_internals import inproc

ADMIN = {'X-Auth-Token': 'admin:admin'}


def _timed(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times


def _ms(times):
    times = sorted(times)
    return {
        'median_ms': round(statistics.median(times) * 1e3, 2),
        'p95_ms': round(times[int(len(times) * 0.95) - 1] * 1e3, 2),
        'n': len(times),
    }


def _wait_active(api, expected, timeout=900):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        servers = api.servers()
        if len(servers) >= expected and all(
            s['status'] in ('ACTIVE', 'ERROR') for s in servers
        ):
            return servers
        time.sleep(1)
    raise SystemExit('servers did not build in %d s' % timeout)


def _api_latency(session, url, n):
    paths = ('/v2.1/flavors/detail', '/v2.1/servers/detail?limit=20')
    times = []
    for i in range(n):
        t = time.perf_counter()
        r = session.get(url + paths[i % 2], timeout=60)
        times.append(time.perf_counter() - t)
        assert r.status_code == 200, r.text
    return _ms(times)


class Page(threading.Thread):
    """One open dashboard: the event stream plus polling."""

    def __init__(self, url, stop, hosts_every=1.0, failures_every=2.0):
        super().__init__(daemon=True)
        self.url, self.stop = url, stop
        self.hosts_every, self.failures_every = hosts_every, failures_every
        self.polls = 0
        self.decisions = 0
        self.stream = threading.Thread(target=self._follow, daemon=True)

    def _follow(self):
        with requests.get(
            self.url + '/dashboard/api/events',
            headers=ADMIN,
            stream=True,
            timeout=120,
        ) as r:
            for line in r.iter_lines():
                if line.startswith(b'event: decision'):
                    self.decisions += 1
                if self.stop.is_set():
                    return

    def run(self):
        self.stream.start()
        session = requests.Session()
        session.headers.update(ADMIN)
        next_failures = 0.0
        while not self.stop.is_set():
            session.get(self.url + '/dashboard/api/hosts', timeout=60)
            now = time.monotonic()
            if now >= next_failures:
                session.get(self.url + '/dashboard/api/failures', timeout=60)
                next_failures = now + self.failures_every
            self.polls += 1
            self.stop.wait(self.hosts_every)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, default=1000)
    parser.add_argument('--servers', type=int, default=500)
    parser.add_argument('--dashboards', type=int, default=8)
    parser.add_argument('--requests', type=int, default=300)
    parser.add_argument('--repeat', type=int, default=10)
    parser.add_argument('--json', help='write the figures here')
    parser.add_argument('--snapshot-of', metavar='STATE_DIR')
    args = parser.parse_args(argv)
    if args.snapshot_of:
        return _snapshot_only(args)

    state = tempfile.mkdtemp(prefix='dashboard-bench-')
    print('state in %s' % state)
    t0 = time.perf_counter()
    cloud = cloud_mod.Cloud(
        state,
        hosts=args.hosts,
        shared_hosts=True,
        overrides={'dashboard': {'cache_ttl': 2.0}},
    )
    cloud.start()
    out = {
        'hosts': args.hosts,
        'servers': args.servers,
        'dashboards': args.dashboards,
        'loadavg_start': os.getloadavg(),
    }
    try:
        demo.seed(cloud.api_url)
        api = client_mod.ComputeClient(cloud.api_url)
        flavor = [
            f
            for f in api.get('/flavors')['flavors']
            if f['name'] == 'm1.small'
        ][0]
        image = api.images()[0]
        print('cloud up in %.1f s' % (time.perf_counter() - t0))
        out['hosts_reported'] = _until_hosts(cloud, args.hosts)
        print('%d hosts reported' % out['hosts_reported'])
        booted = 0
        while booted < args.servers:
            n = min(100, args.servers - booted)
            api.create_server(
                'bench-%d' % booted,
                flavor['id'],
                image['id'],
                min_count=n,
                max_count=n,
            )
            booted += n
        _wait_active(api, args.servers)
        print('%d servers built' % args.servers)

        deps = cloud_api_deps(cloud)
        snap = snapshot.hosts(deps.api_db, deps.cells)
        assert len(snap['hosts']) == out['hosts_reported'], len(snap['hosts'])
        out['snapshot'] = _ms(
            _timed(
                lambda: snapshot.hosts(deps.api_db, deps.cells), args.repeat
            )
        )
        out['snapshot_bytes'] = len(
            requests.get(
                cloud.api_url + '/dashboard/api/hosts',
                headers=ADMIN,
                timeout=60,
            ).content
        )

        def cold():
            deps.dashboard.cache._entries.clear()
            r = requests.get(
                cloud.api_url + '/dashboard/api/hosts',
                headers=ADMIN,
                timeout=60,
            )
            assert r.status_code == 200

        out['http_hosts_cold'] = _ms(_timed(cold, args.repeat))
        out['http_hosts_warm'] = _ms(
            _timed(
                lambda: requests.get(
                    cloud.api_url + '/dashboard/api/hosts',
                    headers=ADMIN,
                    timeout=60,
                ),
                args.repeat,
            )
        )
        print(
            'snapshot %s; GET hosts cold %s, warm %s'
            % (out['snapshot'], out['http_hosts_cold'], out['http_hosts_warm'])
        )

        out['per_provider_usages_s'] = round(_per_provider(cloud), 2)
        print('per-provider usages: %.2f s' % out['per_provider_usages_s'])

        session = requests.Session()
        session.headers.update(ADMIN)
        _api_latency(session, cloud.api_url, 20)  # warm up

        def measured(tag):
            # The same load in both phases: 20 boots while the requests run.
            booter = threading.Thread(
                target=lambda: [
                    api.create_server(
                        '%s-%d' % (tag, i), flavor['id'], image['id']
                    )
                    for i in range(20)
                ],
                daemon=True,
            )
            booter.start()
            figures = _api_latency(session, cloud.api_url, args.requests)
            booter.join()
            return figures

        out['api_without_dashboards'] = measured('quiet')
        stop = threading.Event()
        pages = [Page(cloud.api_url, stop) for _ in range(args.dashboards)]
        for page in pages:
            page.start()
        time.sleep(2)
        out['api_with_dashboards'] = measured('watched')
        time.sleep(2)
        stop.set()
        out['dashboard_polls'] = sum(p.polls for p in pages)
        out['decisions_streamed'] = sum(p.decisions for p in pages)
        print(
            'API latency without dashboards %s; with %d dashboards %s '
            '(%d polls, %d decisions streamed)'
            % (
                out['api_without_dashboards'],
                args.dashboards,
                out['api_with_dashboards'],
                out['dashboard_polls'],
                out['decisions_streamed'],
            )
        )
    finally:
        out['loadavg_end'] = os.getloadavg()
        cloud.stop()
        inproc.reset_buses()
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(out, f, indent=2, sort_keys=True)
    print(json.dumps(out, sort_keys=True))
    return 0


def _snapshot_only(args):
    from nimbus.common import config
    from nimbus import services

    url = 'sqlite:///%s' % os.path.join(
        os.path.abspath(args.snapshot_of), 'api.sqlite'
    )
    conf = config.build_conf(
        [], overrides={'api_database': {'connection': url}}
    )
    api_db, cells = services.api_db(conf), services.cell_directory(conf)
    snap = snapshot.hosts(api_db, cells)
    out = {
        'hosts': len(snap['hosts']),
        'servers': snap['servers'],
        'snapshot': _ms(
            _timed(lambda: snapshot.hosts(api_db, cells), args.repeat)
        ),
        'failed_builds': _ms(
            _timed(lambda: snapshot.failed_builds(api_db, cells), args.repeat)
        ),
        'loadavg': os.getloadavg(),
    }
    print(json.dumps(out, sort_keys=True))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(out, f, indent=2, sort_keys=True)
    return 0


def cloud_api_deps(cloud):
    """The running API's injected dependencies (its WSGI app's ``deps``)."""
    for item in cloud._stoppables:
        if hasattr(item, 'cache') and hasattr(item, 'hub'):
            board = item
            break
    else:
        raise SystemExit('no dashboard in this cloud')
    from nimbus import services

    return _Deps(
        services.api_db(cloud.conf), services.cell_directory(cloud.conf), board
    )


class _Deps:
    def __init__(self, api_db, cells, dashboard):
        self.api_db, self.cells, self.dashboard = api_db, cells, dashboard


def _until_hosts(cloud, n, timeout=900, settle=20):
    """Wait until the N hosts reported, or their number stopped growing for
    ``settle`` seconds (on a loaded machine SQLite may refuse a host's
    first report: "database is locked"). Returns how many reported."""
    deadline = time.monotonic() + timeout
    deps = cloud_api_deps(cloud)
    seen, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        count = len(snapshot.hosts(deps.api_db, deps.cells)['hosts'])
        if count >= n:
            return count
        if count != seen:
            seen, since = count, time.monotonic()
        elif count > 0 and time.monotonic() - since > settle:
            return count
        time.sleep(1)
    raise SystemExit('the %d hosts did not report in %d s' % (n, timeout))


def _per_provider(cloud):
    session = requests.Session()
    session.headers.update(
        {
            'X-Auth-Token': 'admin:admin',
            'OpenStack-API-Version': 'placement latest',
        }
    )
    t = time.perf_counter()
    providers = session.get(
        cloud.placement_url + '/resource_providers', timeout=60
    ).json()['resource_providers']
    for rp in providers:
        r = session.get(
            '%s/resource_providers/%s/usages'
            % (cloud.placement_url, rp['uuid']),
            timeout=60,
        )
        assert r.status_code == 200, r.text
    return time.perf_counter() - t


if __name__ == '__main__':
    sys.exit(main())
