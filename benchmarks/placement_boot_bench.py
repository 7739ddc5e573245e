"""Placement's own CPU per boot, in process: the scheduler's two requests.

A boot asks placement two things: the allocation candidates of its flavor
(``GET /allocation_candidates`` with the compact answer the scheduler
negotiates, ``X-Nimbus-Candidates: compact-1``) and the claim of one of
them (``PUT /allocations/{consumer}``, a new consumer). This fills a
placement database with ``--hosts`` compute nodes (VCPU 64 ratio 4,
MEMORY_MB 262144, DISK_GB 4000; one transaction) and runs ``--boots``
such pairs one after the other through the WSGI app of this process (no
HTTP server, no sockets to placement), printing the CPU time spent inside
the app per request (``time.thread_time`` around it) and, with
``--profile FILE``, a cProfile of both.

    python benchmarks/placement_boot_bench.py [--hosts 1000] [--boots 300] \\
        [--db sqlite|mysql|URL] [--profile out.prof]

``--db mysql`` creates a database on the test MariaDB
(``NIMBUS_TEST_MYSQL_URL``) and drops it afterwards; run it under the
benchmarks' flock. A benchmark, not a test: the figures move with the
machine's load.
"""

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
import uuid
import warnings

warnings.filterwarnings('ignore')

import orjson  # noqa: E402
import requests  # noqa: E402

from nimbus.common import config  # noqa: E402
from nimbus.common import db as common_db  # noqa: E402
from nimbus.placement import db as placement_db  # noqa: E402
from nimbus.placement import direct  # noqa: E402
from nimbus.placement import wsgi  # noqa: E402

URL = 'http://127.0.0.1:9'
HEADERS = {
    'X-Auth-Token': 'admin',
    'X-Roles': 'admin,service',
    'OpenStack-API-Version': 'placement 1.39',
}
FLAVOR = {'DISK_GB': 1, 'MEMORY_MB': 512, 'VCPU': 1}
QUERY = [
    ('resources', 'DISK_GB:1,MEMORY_MB:512,VCPU:1'),
    ('root_required', '!COMPUTE_STATUS_DISABLED'),
    ('limit', '1000'),
]


def _hosts(n):
    return [
        {
            'uuid': str(uuid.UUID(int=i + 1)),
            'name': 'host%d' % i,
            'inventories': {
                'VCPU': {'total': 64, 'allocation_ratio': 4.0},
                'MEMORY_MB': {'total': 262144, 'reserved': 512},
                'DISK_GB': {'total': 4000},
            },
            'traits': [],
        }
        for i in range(n)
    ]


def run(args, url):
    placement_db.sync(url)
    conf = config.build_conf(
        [], overrides={'placement_database': {'connection': url}}
    )
    app = wsgi.make_app(conf, auth_strategy='noauth2')
    spent = [0.0]

    def timed(environ, start_response):
        t = time.thread_time()
        try:
            return [b''.join(app(environ, start_response))]
        finally:
            spent[0] += time.thread_time() - t

    session = direct.mount(requests.Session(), URL, timed)
    direct.tree_writer(app)(_hosts(args.hosts))
    compact = dict(HEADERS, **{'X-Nimbus-Candidates': 'compact-1'})
    first = session.get(
        URL + '/allocation_candidates', params=QUERY, headers=compact
    )
    assert first.status_code == 200, first.text
    cpu = {'get': 0.0, 'put': 0.0}
    prof = cProfile.Profile() if args.profile else None
    for b in range(args.boots):
        for what in ('get', 'put'):
            spent[0] = 0.0
            if prof:
                prof.enable()
            if what == 'get':
                resp = session.get(
                    URL + '/allocation_candidates',
                    params=QUERY,
                    headers=compact,
                )
                assert resp.status_code == 200, resp.text
                rp = orjson.loads(resp.content)['allocation_requests'][b % 7]
            else:
                body = {
                    'allocations': {rp: {'resources': FLAVOR}},
                    'project_id': 'p',
                    'user_id': 'u',
                    'consumer_generation': None,
                    'consumer_type': 'INSTANCE',
                }
                resp = session.put(
                    URL + '/allocations/%s' % uuid.uuid4(),
                    json=body,
                    headers=HEADERS,
                )
                assert resp.status_code == 204, resp.text
            if prof:
                prof.disable()
            cpu[what] += spent[0]
    print(
        'hosts %d, boots %d, compact answer %d bytes'
        % (args.hosts, args.boots, len(first.content))
    )
    print(
        'placement CPU ms per boot: GET candidates %.3f, PUT claim %.3f, '
        'total %.3f'
        % (
            cpu['get'] / args.boots * 1e3,
            cpu['put'] / args.boots * 1e3,
            (cpu['get'] + cpu['put']) / args.boots * 1e3,
        )
    )
    if prof:
        prof.dump_stats(args.profile)
        pstats.Stats(prof).sort_stats('tottime').print_stats(25)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, default=1000)
    parser.add_argument('--boots', type=int, default=300)
    parser.add_argument('--db', default='sqlite')
    parser.add_argument('--profile')
    args = parser.parse_args()
    cleanup = None
    if args.db == 'sqlite':
        url = 'sqlite:///%s' % os.path.join(tempfile.mkdtemp(), 'p.sqlite')
    elif args.db == 'mysql':
        from nimbus.testing import infra

        url, cleanup = infra.mysql_database()
    else:
        url = args.db
    try:
        run(args, url)
    finally:
        common_db.get_database(url).dispose()
        if cleanup is not None:
            cleanup()
    return 0


if __name__ == '__main__':
    sys.exit(main())
