"""The accelerator API calls of ``accel_bench.py``, timed against OpenStack
Cyborg's own API, for a side-by-side figure.

Run with the Python of a venv that has ``openstack-cyborg`` installed
(``accel_bench.py --compare-cyborg VENV`` does; it prints JSON on its last
line). One process: Cyborg's API (its pecan app, without keystonemiddleware:
identity from the ``X-*`` headers, as behind auth_token) served by a
threaded wsgiref server on 127.0.0.1, and Cyborg's conductor (which every
write goes through) on oslo.messaging's in-process ``fake://`` transport,
its database a MariaDB database of its own (``--mysql``, default the
local server as root; dropped at the end) made by ``cyborg-dbsync``
(Cyborg's migrations do not run on SQLite). Needs ``pymysql`` in the
venv. The same calls as Nimbus's
run: a device profile create, an ARQ create, a list of 100 ARQs; each
``--calls`` times, one at a time. No bind round trip: Cyborg binds only
ARQs of devices its agent reported and placement knows, which this
harness does not set up.

    VENV/bin/python benchmarks/cyborg_api_calls.py [--calls 50]
"""

import argparse
import json
import os
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from wsgiref import simple_server

import requests

HEADERS = {
    'X-Auth-Token': 'bench',
    'X-User-Id': 'bench',
    'X-Project-Id': 'b3c0e9c4d1f84f2aa0b6c9d5e1f2a3b4',
    'X-Roles': 'admin,member,reader,service',
    'X-Service-Roles': 'service',
    'OpenStack-API-Version': 'accelerator 2.0',
}


class _Quiet(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True


def _percentile(values, fraction):
    values = sorted(values)
    return values[min(len(values) - 1, int(fraction * len(values)))]


def _timed(calls, fn):
    took = []
    for index in range(calls):
        began = time.perf_counter()
        fn(index)
        took.append(time.perf_counter() - began)
    return {
        'calls': calls,
        'p50_ms': round(_percentile(took, 0.5) * 1000, 2),
        'p99_ms': round(_percentile(took, 0.99) * 1000, 2),
        'calls_per_s': round(calls / max(sum(took), 1e-9), 1),
    }


def _ok(response, status):
    if response.status_code != status:
        raise RuntimeError(
            '%s %s: %d %s'
            % (
                response.request.method,
                response.request.url,
                response.status_code,
                response.text[:300],
            )
        )
    return response


def _placement_stub():
    """A version document where the conductor's placement client looks."""
    body = json.dumps(
        {
            'versions': [
                {
                    'id': 'v1.0',
                    'min_version': '1.0',
                    'max_version': '1.39',
                    'status': 'CURRENT',
                    'links': [{'rel': 'self', 'href': ''}],
                }
            ]
        }
    ).encode()

    def app(environ, start_response):
        start_response('200 OK', [('Content-Type', 'application/json')])
        return [body]

    httpd = simple_server.make_server(
        '127.0.0.1', 0, app, server_class=_Server, handler_class=_Quiet
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return 'http://127.0.0.1:%d' % httpd.server_address[1]


def _start(workdir, database_url):
    conf = os.path.join(workdir, 'cyborg.conf')
    with open(conf, 'w') as f:
        f.write(
            '[DEFAULT]\n'
            'transport_url = fake:/\n'
            'host = bench\n'
            '[database]\n'
            'connection = %s\n'
            # the conductor builds a placement client at start (version
            # discovery only); none of the calls timed here reaches it
            '[placement]\n'
            'auth_type = none\n'
            'endpoint_override = %s\n' % (database_url, _placement_stub())
        )
    dbsync = os.path.join(os.path.dirname(sys.executable), 'cyborg-dbsync')
    subprocess.run(
        [dbsync, '--config-file', conf, 'upgrade'],
        check=True,
        capture_output=True,
    )
    import oslo_messaging as messaging

    from cyborg.api import app as cyborg_app
    from cyborg.common import constants
    from cyborg.common import rpc
    from cyborg.common import service
    from cyborg.conductor import manager
    from cyborg.objects import base as objects_base

    service.prepare_service(['cyborg-bench', '--config-file', conf])
    conductor = manager.ConductorManager(constants.CONDUCTOR_TOPIC, 'bench')
    server = rpc.get_server(
        messaging.Target(topic=constants.CONDUCTOR_TOPIC, server='bench'),
        [conductor],
        objects_base.CyborgObjectSerializer(),
    )
    server.start()
    httpd = simple_server.make_server(
        '127.0.0.1',
        0,
        cyborg_app.setup_app(),
        server_class=_Server,
        handler_class=_Quiet,
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return 'http://127.0.0.1:%d/v2' % httpd.server_address[1]


def measure(url, calls):
    session = requests.Session()
    session.headers.update(HEADERS)
    run_id = uuid.uuid4().hex[:8]
    figures = {}
    figures['profile_create'] = _timed(
        calls,
        lambda i: _ok(
            session.post(
                url + '/device_profiles',
                json=[
                    {
                        'name': 'call-%s-%d' % (run_id, i),
                        'groups': [{'resources:FPGA': '1'}],
                    }
                ],
                timeout=60,
            ),
            201,
        ),
    )
    made = []

    def create(_i):
        response = _ok(
            session.post(
                url + '/accelerator_requests',
                json={'device_profile_name': 'call-%s-0' % run_id},
                timeout=60,
            ),
            201,
        )
        made.extend(a['uuid'] for a in response.json()['arqs'])

    figures['arq_create'] = _timed(calls, create)
    while len(made) < 100:
        create(None)

    def list_arqs(_i):
        arqs = _ok(
            session.get(url + '/accelerator_requests', timeout=60), 200
        ).json()['arqs']
        if len(arqs) < 100:
            raise RuntimeError('listed %d ARQs, not 100' % len(arqs))

    figures['arq_list_100'] = _timed(calls, list_arqs)
    return figures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--calls', type=int, default=50)
    parser.add_argument(
        '--mysql', default='root@127.0.0.1:3306', help='user@host:port'
    )
    args = parser.parse_args(argv)
    import pymysql

    user, _, where = args.mysql.partition('@')
    host, _, port = where.partition(':')
    name = 'cyborg_bench_%s' % uuid.uuid4().hex[:8]
    admin = pymysql.connect(host=host, port=int(port or 3306), user=user)
    admin.cursor().execute('CREATE DATABASE %s' % name)
    try:
        with tempfile.TemporaryDirectory(prefix='cyborg-bench-') as workdir:
            url = _start(
                workdir,
                'mysql+pymysql://%s@%s:%s/%s' % (user, host, port, name),
            )
            figures = measure(url, args.calls)
    finally:
        admin.cursor().execute('DROP DATABASE %s' % name)
        admin.close()
    import cyborg.version

    figures['cyborg'] = cyborg.version.version_info.release_string()
    print(json.dumps(figures))


if __name__ == '__main__':
    main()
