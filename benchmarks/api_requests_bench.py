"""CPU milliseconds nimbus-api spends per request, in process, on MariaDB.

An all-in-one cloud on fresh MariaDB databases (in-process bus) boots
``--servers`` servers and stops; then a fresh compute API app on the same
databases (the super conductor's cast recorded, not sent: only the API's
work is measured) serves each request ``--repeat`` times straight through
WSGI, and the process CPU time per request is printed:

- ``idle-list``: ``GET /servers/detail?changes-since=<future>``, what
  boot_bench's watcher asks every 0.2 s when nothing changed;
- ``list-N``: the same list returning the N servers;
- ``show``: ``GET /servers/{id}``;
- ``create``: ``POST /servers`` (validation, quota, flavor and image,
  the build request, request spec and mapping rows).

Admin at microversion 2.72 with the project's quotas lifted, as boot_bench.
Nothing else runs in the process meanwhile, but the machine's other load
still shows: compare runs made one after the other.

    .venv/bin/python benchmarks/api_requests_bench.py [--servers 40]
        [--repeat 200] [--only idle-list,create] [--profile FILE]

``--profile FILE`` writes cProfile stats of the ``--only`` cases (the
calling thread: the cell queries run in threads of their own).
"""

import argparse
import cProfile
import datetime
import io
import json
import os
import sys
import tempfile
import time

from nimbus.allinone import client as client_mod
from nimbus.allinone import cloud as cloud_mod
from nimbus.api import app as app_mod
from nimbus.db import cell_mappings
from nimbus.messaging_internals import inproc
from nimbus import services
from nimbus.testing import infra
from nimbus.testing import quiet

HEADERS = {
    'HTTP_X_AUTH_TOKEN': 'admin:admin',
    'HTTP_X_ROLES': 'admin',
    'HTTP_OPENSTACK_API_VERSION': 'compute 2.72',
    'CONTENT_TYPE': 'application/json',
}


class RecordedCasts:
    """The super conductor's API, keeping count instead of casting."""

    def __init__(self):
        self.casts = 0

    def schedule_and_build_instances(self, ctx, spec, uuids):
        self.casts += 1


def _booted_cloud(workdir, urls, count):
    """Boot ``count`` servers on an all-in-one cloud; stop it; return its
    conf, flavor, image and the servers' uuids."""
    cloud = cloud_mod.Cloud(
        workdir,
        hosts=2,
        transport_url='inproc:///api-bench',
        cell_transport_url='inproc:///api-bench-cell1',
        overrides=quiet.quiet_overrides(
            quota={'instances': 10, 'cores': 20, 'ram': 51200}
        ),
        database_urls=urls,
        discover_interval=0,
        shared_hosts=True,
    )
    cloud.start()
    try:
        api = client_mod.ComputeClient(cloud.api_url)
        api.session.put(
            api.url + '/os-quota-sets/admin',
            json={'quota_set': {'instances': -1, 'cores': -1, 'ram': -1}},
        )
        flavor = api.create_flavor('m1.bench', 1, 64, 1)
        image = api.create_image('bench-image')
        cell_mappings.discover_hosts(services.api_db(cloud.conf))
        uuids = [
            api.create_server('s-%03d' % i, flavor['id'], image['id'])[
                'server'
            ]['id']
            for i in range(count)
        ]
        cloud_mod.wait_for(
            lambda: (
                [s['status'] for s in api.servers()].count('ACTIVE') >= count
            ),
            timeout=300,
            what='%d servers ACTIVE' % count,
        )
        return cloud.conf, flavor, image, uuids
    finally:
        cloud.stop()
        inproc.reset_buses()


def _caller(app):
    def call(method, path, query='', body=None):
        environ = {
            'REQUEST_METHOD': method,
            'PATH_INFO': path,
            'QUERY_STRING': query,
            'SERVER_NAME': 'localhost',
            'SERVER_PORT': '8774',
            'SERVER_PROTOCOL': 'HTTP/1.1',
            'REMOTE_ADDR': '127.0.0.1',
            'wsgi.url_scheme': 'http',
            'wsgi.input': io.BytesIO(body or b''),
            'wsgi.errors': sys.stderr,
        }
        if body:
            environ['CONTENT_LENGTH'] = str(len(body))
        environ.update(HEADERS)
        answer = {}

        def start_response(status, headers, exc_info=None):
            answer['status'] = status

        data = b''.join(app(environ, start_response))
        if not answer['status'].startswith('20'):
            raise RuntimeError('%s %s: %s' % (method, path, data[:300]))
        return data

    return call


def _cases(call, flavor, image, uuids):
    now = datetime.datetime.now(datetime.timezone.utc)
    stamp = '%Y-%m-%dT%H:%M:%SZ'
    future = (now + datetime.timedelta(seconds=5)).strftime(stamp)
    past = (now - datetime.timedelta(hours=1)).strftime(stamp)
    body = json.dumps(
        {
            'server': {
                'name': 'bench',
                'flavorRef': flavor['id'],
                'imageRef': image['id'],
                'networks': 'none',
            }
        }
    ).encode()
    detail = '/v2.1/servers/detail'
    query = 'changes-since=%s&limit=100000'
    return [
        ('idle-list', lambda: call('GET', detail, query % future)),
        ('list-%d' % len(uuids), lambda: call('GET', detail, query % past)),
        ('show', lambda: call('GET', '/v2.1/servers/' + uuids[0])),
        ('create', lambda: call('POST', '/v2.1/servers', body=body)),
    ]


def measure(cases, repeat, profile=None):
    """``{case: CPU ms per request}``; ``profile``: a cProfile.Profile
    enabled around every case."""
    results = {}
    for name, request in cases:
        for _ in range(5):
            request()  # warm: statements compiled, pools filled
        if profile is not None:
            profile.enable()
        began = time.process_time()
        for _ in range(repeat):
            request()
        results[name] = (time.process_time() - began) * 1000 / repeat
        if profile is not None:
            profile.disable()
        print('%-10s %6.2f ms CPU per request' % (name, results[name]))
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--servers', type=int, default=40)
    parser.add_argument('--repeat', type=int, default=200)
    parser.add_argument('--only', help='comma-separated case names')
    parser.add_argument('--profile')
    parser.add_argument('--json')
    args = parser.parse_args(argv)
    cleanups = []
    try:
        urls = {}
        for name in ('api', 'cell0', 'cell1', 'placement'):
            urls[name], cleanup = infra.database('mysql')
            cleanups.append(cleanup)
        workdir = tempfile.mkdtemp(prefix='nimbus-api-bench-')
        conf, flavor, image, uuids = _booted_cloud(
            os.path.join(workdir, 'cloud'), urls, args.servers
        )
        app = app_mod.make_app(
            conf,
            api_db=services.api_db(conf),
            cells=services.cell_directory(conf),
            conductor_api=RecordedCasts(),
        )
        cases = _cases(_caller(app), flavor, image, uuids)
        if args.only:
            wanted = args.only.split(',')
            cases = [case for case in cases if case[0] in wanted]
        profile = cProfile.Profile() if args.profile else None
        results = measure(cases, args.repeat, profile)
        if profile is not None:
            profile.dump_stats(args.profile)
        if args.json:
            with open(args.json, 'w') as f:
                json.dump(results, f, indent=2)
        return 0
    finally:
        for cleanup in reversed(cleanups):
            cleanup()


if __name__ == '__main__':
    sys.exit(main())
