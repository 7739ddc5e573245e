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
run: a device profile create, an ARQ create, a list of 100 ARQs and a
bind round trip; each ``--calls`` times, one at a time.

For the bind, the database is seeded as Cyborg's agent would report one
FPGA per host: ``--calls`` devices (type FPGA, one host each), each with
a control path, a deployable (its ``rp_uuid`` a fresh uuid, driver
``fake``) and one PCI attach handle, made through Cyborg's own objects.
The round trip is Cyborg's bind as Nova drives it: ``PATCH
/v2/accelerator_requests`` with the JSON-patch bind form (hostname,
device_rp_uuid, instance_uuid) as a service (``X-Service-Roles``), then
``GET ?instance=&bind_state=resolved`` until it answers 200 with the ARQ
``Bound``. The profile has no bitstream or function, so Cyborg's bind
programs nothing and never calls placement (only its start-up version
discovery does). What the bind calls out to is Nova's
``POST /os-server-external-events`` (the ``accelerator-request-bound``
notification, sent before the PATCH answers): a local HTTP stub in this
process answers it 200 (as Nova does for a host-assigned instance) and
counts the events; the run fails unless every bind sent one
``completed`` event. After each bind the instance's ARQs are deleted
(not timed), as Nimbus's run frees its device.

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


def _version_document(version_id, minimum, maximum, href):
    return {
        'id': version_id,
        'min_version': minimum,
        'max_version': maximum,
        'version': maximum,
        'status': 'CURRENT',
        'links': [{'rel': 'self', 'href': href}],
    }


def _peer_stub(events):
    """The peers Cyborg's conductor calls, on one local HTTP server:
    ``/placement`` answers its version discovery; ``/compute`` answers
    Nova's version discovery and ``POST /os-server-external-events``
    (200, each event ``code`` 200), appending the events to ``events``.
    A stub, not Nova or placement: see the module doc."""

    def app(environ, start_response):
        path = environ.get('PATH_INFO', '')
        base = 'http://%s' % environ['HTTP_HOST']
        if environ['REQUEST_METHOD'] == 'POST' and path.endswith(
            '/os-server-external-events'
        ):
            length = int(environ.get('CONTENT_LENGTH') or 0)
            sent = json.loads(environ['wsgi.input'].read(length))['events']
            events.extend(sent)
            body = {'events': [dict(e, code=200) for e in sent]}
        elif path.startswith('/compute'):
            doc = _version_document(
                'v2.1', '2.1', '2.95', base + '/compute/v2.1/'
            )
            body = (
                {'versions': [doc]}
                if path.rstrip('/') in ('/compute',)
                else {'version': doc}
            )
        else:
            doc = _version_document('v1.0', '1.0', '1.39', base + '/placement')
            body = {'versions': [doc]}
        start_response('200 OK', [('Content-Type', 'application/json')])
        return [json.dumps(body).encode()]

    httpd = simple_server.make_server(
        '127.0.0.1', 0, app, server_class=_Server, handler_class=_Quiet
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return 'http://127.0.0.1:%d' % httpd.server_address[1]


def _start(workdir, database_url, events):
    peers = _peer_stub(events)
    conf = os.path.join(workdir, 'cyborg.conf')
    with open(conf, 'w') as f:
        f.write(
            '[DEFAULT]\n'
            'transport_url = fake:/\n'
            'host = bench\n'
            '[database]\n'
            'connection = %s\n'
            # the conductor builds a placement client at start (version
            # discovery only); the bind of a profile without a bitstream
            # or function never reaches placement
            '[placement]\n'
            'auth_type = none\n'
            'endpoint_override = %s/placement\n'
            # the bind's notification to Nova
            '[nova]\n'
            'auth_type = none\n'
            'endpoint_override = %s/compute/v2.1\n'
            % (database_url, peers, peers)
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


def _seed_fpgas(count):
    """``count`` FPGAs, one per host, as Cyborg's agent reports them
    (device, control path, deployable with an ``rp_uuid``, one PCI attach
    handle), through Cyborg's objects; ``[(hostname, rp_uuid)]``."""
    from cyborg import context as cyborg_context
    from cyborg import objects

    objects.register_all()
    ctx = cyborg_context.get_admin_context()
    run_id = uuid.uuid4().hex[:8]
    seeded = []
    for index in range(count):
        host = 'bench-%s-%d' % (run_id, index)
        pci = {'domain': '0000', 'bus': '%02x' % (index % 256)}
        pci.update(device='00', function='0')
        device = objects.Device(
            context=ctx,
            uuid=str(uuid.uuid4()),
            type='FPGA',
            vendor='8086',
            model='bench',
            std_board_info=json.dumps({'device_id': '09c4', 'class': 'Fake'}),
            vendor_board_info='bench',
            hostname=host,
        )
        device.create(ctx)
        cpid = objects.ControlpathID(
            context=ctx,
            uuid=str(uuid.uuid4()),
            device_id=device.id,
            cpid_type='PCI',
            cpid_info=json.dumps(pci),
        )
        cpid.create(ctx)
        rp_uuid = str(uuid.uuid4())
        deployable = objects.Deployable(
            context=ctx,
            uuid=str(uuid.uuid4()),
            name='%s_fake_0' % host,
            num_accelerators=1,
            device_id=device.id,
            driver_name='fake',
            rp_uuid=rp_uuid,
        )
        deployable.create(ctx)
        objects.AttachHandle(
            context=ctx,
            uuid=str(uuid.uuid4()),
            deployable_id=deployable.id,
            cpid_id=cpid.id,
            attach_type='PCI',
            attach_info=json.dumps(pci),
            in_use=False,
        ).create(ctx)
        seeded.append((host, rp_uuid))
    return seeded


def measure_bind(session, url, arqs, fpgas, events):
    """The bind round trip (see the module doc) of ``arqs[i]`` to
    ``fpgas[i]``, one after another; the instance's ARQs are deleted
    after each (not timed)."""
    took = []
    for arq, (host, rp_uuid) in zip(arqs, fpgas, strict=False):
        instance = str(uuid.uuid4())
        ops = [
            ('hostname', host),
            ('device_rp_uuid', rp_uuid),
            ('instance_uuid', instance),
        ]
        body = {
            arq: [{'path': '/' + f, 'op': 'add', 'value': v} for f, v in ops]
        }
        params = {'instance': instance, 'bind_state': 'resolved'}
        began = time.perf_counter()
        _ok(
            session.patch(
                url + '/accelerator_requests', json=body, timeout=60
            ),
            202,
        )
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
    done = [e for e in events if e.get('status') == 'completed']
    if len(done) != len(took):
        raise RuntimeError(
            '%d binds sent %d completed events to Nova: %s'
            % (len(took), len(done), events[-3:])
        )
    return {
        'calls': len(took),
        'p50_ms': round(_percentile(took, 0.5) * 1000, 2),
        'p99_ms': round(_percentile(took, 0.99) * 1000, 2),
        'calls_per_s': round(len(took) / max(sum(took), 1e-9), 1),
        'nova_events': len(events),
    }


def measure(url, calls, events):
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
    fpgas = _seed_fpgas(calls)
    figures['bind_round_trip'] = measure_bind(
        session, url, made[:calls], fpgas, events
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
            events = []
            url = _start(
                workdir,
                'mysql+pymysql://%s@%s:%s/%s' % (user, host, port, name),
                events,
            )
            figures = measure(url, args.calls, events)
    finally:
        admin.cursor().execute('DROP DATABASE %s' % name)
        admin.close()
    import cyborg.version

    figures['cyborg'] = cyborg.version.version_info.release_string()
    print(json.dumps(figures))


if __name__ == '__main__':
    main()
