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
run: a device profile create, an ARQ create, a list of 100 ARQs and the
bind round trip; each ``--calls`` times, one at a time.

The bind round trip is what Nova does with Cyborg: a service-token
``PATCH /v2/accelerator_requests`` (hostname, device_rp_uuid,
instance_uuid), then ``GET ?instance=&bind_state=resolved`` until it
answers 200, the ARQ Bound; the ARQs of the instance are deleted before
the next one (not timed). Cyborg binds only to a deployable its agent
reported, so the harness writes what an agent's report leaves in Cyborg's
database through Cyborg's own objects: one FPGA device on host
``bench-host``, its control path, one deployable (``rp_uuid`` a fixed
uuid) of ``--calls`` accelerators and as many PCI attach handles. The
FPGA profile names no bitstream, so Cyborg binds at once (no agent
programming; Nimbus's side programs its fake FPGA through its agent, so
the comparison does not favour Nimbus). Cyborg then notifies Nova
(``POST /os-server-external-events``): a local stub answers 200 for
Nova, as it does for placement's version document.

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

# Nova's external events Cyborg sent the stub (one per bound ARQ).
NOTIFIED = []
HOST = 'bench-host'
DEVICE_RP = '3f1f3e5c-2b8e-4c7e-9d0a-5b6c7d8e9f01'

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


def _stub():
    """A version document where the conductor's placement client looks,
    and Nova's external events API answering 200 to Cyborg's bind
    notifications (the events echoed with code 200)."""
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
        if environ['REQUEST_METHOD'] == 'POST':
            size = int(environ.get('CONTENT_LENGTH') or 0)
            events = json.loads(environ['wsgi.input'].read(size))['events']
            NOTIFIED.extend(events)
            answer = json.dumps(
                {'events': [dict(e, code=200) for e in events]}
            ).encode()
            start_response('200 OK', [('Content-Type', 'application/json')])
            return [answer]
        start_response('200 OK', [('Content-Type', 'application/json')])
        return [body]

    httpd = simple_server.make_server(
        '127.0.0.1', 0, app, server_class=_Server, handler_class=_Quiet
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return 'http://127.0.0.1:%d' % httpd.server_address[1]


def _start(workdir, database_url, handles):
    stub = _stub()
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
            'endpoint_override = %s\n'
            # the bind notifies Nova: the stub answers for it
            '[nova]\n'
            'auth_type = none\n'
            'endpoint_override = %s\n' % (database_url, stub, stub)
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
    _seed_device(handles)
    httpd = simple_server.make_server(
        '127.0.0.1',
        0,
        cyborg_app.setup_app(),
        server_class=_Server,
        handler_class=_Quiet,
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return 'http://127.0.0.1:%d/v2' % httpd.server_address[1]


def _seed_device(handles):
    """What an agent's report of one FPGA leaves in Cyborg's database."""
    from cyborg import context as cyborg_context
    from cyborg import objects

    objects.register_all()
    ctxt = cyborg_context.get_admin_context()
    device = objects.Device(
        ctxt,
        uuid=str(uuid.uuid4()),
        type='FPGA',
        vendor='0x8086',
        model='bench-fpga',
        std_board_info='{"device_id": "0x09c4", "class": "Fpga"}',
        vendor_board_info='{}',
        hostname=HOST,
    )
    device.create(ctxt)
    pci = {'domain': '0000', 'bus': '5e', 'device': '00', 'function': '0'}
    cpid = objects.ControlpathID(
        ctxt,
        uuid=str(uuid.uuid4()),
        device_id=device.id,
        cpid_type='PCI',
        cpid_info=json.dumps(pci),
    )
    cpid.create(ctxt)
    deployable = objects.Deployable(
        ctxt,
        uuid=str(uuid.uuid4()),
        name='%s_fpga_0' % HOST,
        num_accelerators=handles,
        device_id=device.id,
        driver_name='fake',
        rp_uuid=DEVICE_RP,
    )
    deployable.create(ctxt)
    for index in range(handles):
        handle = objects.AttachHandle(
            ctxt,
            uuid=str(uuid.uuid4()),
            deployable_id=deployable.id,
            cpid_id=cpid.id,
            attach_type='PCI',
            attach_info=json.dumps(dict(pci, function=str(index % 8))),
            in_use=False,
        )
        handle.create(ctxt)


def _bind_round_trips(session, url, made, calls):
    """Nova's bind of each ARQ of ``made`` in turn: PATCH, then GET until
    resolved (timed); the instance's ARQs deleted afterwards (not)."""
    took = []
    for arq in made[:calls]:
        instance = str(uuid.uuid4())
        ops = [
            ('hostname', HOST),
            ('device_rp_uuid', DEVICE_RP),
            ('instance_uuid', instance),
        ]
        began = time.perf_counter()
        _ok(
            session.patch(
                url + '/accelerator_requests',
                json={
                    arq: [
                        {'path': '/' + f, 'op': 'add', 'value': v}
                        for f, v in ops
                    ]
                },
                timeout=60,
            ),
            202,
        )
        params = {'instance': instance, 'bind_state': 'resolved'}
        deadline = time.monotonic() + 60
        while True:
            response = session.get(
                url + '/accelerator_requests', params=params, timeout=60
            )
            if response.status_code == 200:
                [bound] = response.json()['arqs']
                if bound['state'] != 'Bound':
                    raise RuntimeError('bind of %s: %s' % (arq, bound))
                break
            _ok(response, 423)
            if time.monotonic() > deadline:
                raise RuntimeError('bind of %s never resolved' % arq)
            time.sleep(0.002)
        took.append(time.perf_counter() - began)
        _ok(
            session.delete(
                url + '/accelerator_requests',
                params={'instance': instance},
                timeout=60,
            ),
            204,
        )
    return {
        'calls': len(took),
        'p50_ms': round(_percentile(took, 0.5) * 1000, 2),
        'p99_ms': round(_percentile(took, 0.99) * 1000, 2),
        'calls_per_s': round(len(took) / max(sum(took), 1e-9), 1),
        'nova_events': len(NOTIFIED),
    }


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
    figures['bind_round_trip'] = _bind_round_trips(session, url, made, calls)
    if figures['bind_round_trip']['nova_events'] < calls:
        raise RuntimeError(
            'Cyborg notified %d binds, not %d'
            % (figures['bind_round_trip']['nova_events'], calls)
        )
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
                args.calls,
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
