"""OpenStack Nova 34 and Placement 16 from a venv, for side-by-side runs.

``boot_bench.py --compare-nova VENV`` boots through this cloud the same
load it sends to Nimbus. What runs, each in its own process from the
venv's interpreter:

- Placement 16's WSGI application under cheroot, noauth2;
- nova-api: Nova's ``nova.wsgi.osapi_compute`` application under cheroot,
  with a paste pipeline written here in which Nova's
  ``NovaKeystoneContext`` takes the caller from the ``X-User-Id``,
  ``X-Project-Id`` and ``X-Roles`` headers that keystonemiddleware would
  set. Nova 34 has no noauth2 any more; trusting the headers is its
  equivalent (no token is checked, as with Nimbus's noauth2);
- nova-conductor and nova-scheduler (Nova's defaults unless ``options``
  say otherwise);
- ``computes`` nova-compute processes with ``fake.FakeDriver``, each its
  own host;
- a stub (a thread of this process) answering Glance v2's image show,
  list and schema for one image, since Nova reads the image on create, and
  Neutron's port, network and security group lists (empty), since the
  compute API lists a server's ports on every show.

The databases are fresh MariaDB databases (API, cell0, cell1, placement)
and the bus a fresh RabbitMQ vhost, dropped at the end. Servers are booted
with ``networks: none``, so no network service is needed.

    python -m venv /tmp/nova34-venv
    /tmp/nova34-venv/bin/pip install nova==34.0.0 \
        openstack-placement==16.0.0 pymysql cheroot
"""

import http.server
import json
import os
import socketserver
import subprocess
import sys
import tempfile
import threading
import time


from nimbus.testing import infra

IMAGE_ID = '155d900f-4e14-4e4c-a73d-069cbf4541e6'

# The paste pipeline of the compute API with noauth2: Nova's own
# middleware factories, named by their entry points in Nova's package.
API_PASTE = """
[composite:osapi_compute]
use = call:nova.api.openstack.urlmap:urlmap_factory
/: oscomputeversions
/v2.1: openstack_compute_api_v21

[composite:openstack_compute_api_v21]
use = call:nova.api.auth:pipeline_factory_v21
keystone = request_id faultwrap sizelimit keystonecontext osapi_compute_app_v21

[filter:request_id]
paste.filter_factory = oslo_middleware:RequestId.factory

[filter:faultwrap]
paste.filter_factory = nova.api.openstack:FaultWrapper.factory

[filter:keystonecontext]
paste.filter_factory = nova.api.auth:NovaKeystoneContext.factory

[filter:sizelimit]
paste.filter_factory = oslo_middleware:RequestBodySizeLimiter.factory

[app:osapi_compute_app_v21]
paste.app_factory = nova.api.openstack.compute:APIRouterV21.factory

[pipeline:oscomputeversions]
pipeline = faultwrap oscomputeversionapp

[app:oscomputeversionapp]
paste.app_factory = nova.api.openstack.compute.versions:Versions.factory
"""

SERVE_PLACEMENT = r"""
import sys
from cheroot import wsgi
from placement.wsgi import init_application
app = init_application()
server = wsgi.Server(('127.0.0.1', int(sys.argv[1])), app, numthreads=16)
print('serving', flush=True)
server.start()
"""

SERVE_NOVA_API = r"""
import sys
port = int(sys.argv.pop(1))  # Nova's module parses sys.argv as options
from cheroot import wsgi
from nova.wsgi.osapi_compute import application
server = wsgi.Server(('127.0.0.1', port), application, numthreads=16)
print('serving', flush=True)
server.start()
"""


def _image(base):
    return {
        'id': IMAGE_ID,
        'name': 'cirros',
        'status': 'active',
        'visibility': 'public',
        'protected': False,
        'container_format': 'bare',
        'disk_format': 'raw',
        'min_ram': 0,
        'min_disk': 0,
        'size': 1024,
        'checksum': None,
        'owner': None,
        'tags': [],
        'created_at': '2026-01-01T00:00:00Z',
        'updated_at': '2026-01-01T00:00:00Z',
        'file': '/v2/images/%s/file' % IMAGE_ID,
        'self': '/v2/images/%s' % IMAGE_ID,
        'schema': '/v2/schemas/image',
    }


_EMPTY_NETWORK = {
    'ports': 'ports',
    'networks': 'networks',
    'security-groups': 'security_groups',
    'floatingips': 'floatingips',
}


class _ImageHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def _answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802 - http.server's name
        path = self.path.split('?', 1)[0].rstrip('/')
        self.server.seen.append(self.path)
        if path.endswith('/schemas/image'):
            # glanceclient models an image by this schema: the fields the
            # stub's image has, of any type.
            self._answer(
                200,
                {
                    'name': 'image',
                    'properties': {key: {} for key in _image('')},
                    'additionalProperties': {'type': 'string'},
                },
            )
        elif path.endswith('/images/%s' % IMAGE_ID):
            self._answer(200, _image(''))
        elif path.split('.json')[0].rsplit('/', 1)[-1] in _EMPTY_NETWORK:
            # Neutron: the compute API lists a server's ports (for its
            # security groups) on every show; with networks 'none' it has
            # none.
            name = path.split('.json')[0].rsplit('/', 1)[-1]
            self._answer(200, {_EMPTY_NETWORK[name]: []})
        elif path.endswith('/images'):
            self._answer(200, {'images': [_image('')], 'first': path})
        elif path in ('', '/'):
            self._answer(
                300,
                {
                    'versions': [
                        {
                            'id': 'v2.16',
                            'status': 'CURRENT',
                            'links': [{'rel': 'self', 'href': '/v2/'}],
                        }
                    ]
                },
            )
        else:
            self._answer(404, {'error': {'message': 'no image at %s' % path}})


class _ThreadingServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    seen = []


class NovaCloud:
    """The processes of one Nova cloud; ``processes`` maps a daemon's name
    to its pid (as ``boot_bench.run_rate`` wants)."""

    def __init__(self, venv, computes=10, options=None, workdir=None):
        self.venv = venv
        self.bin = os.path.join(venv, 'bin')
        self.computes = computes
        self.options = dict(options or {})
        self.workdir = workdir or tempfile.mkdtemp(prefix='nova-cloud-')
        self.procs = {}
        self._cleanups = []
        self._image_server = None

    # -- setup -------------------------------------------------------------

    def _conf(self, path, sections):
        lines = []
        for section, values in sections.items():
            lines.append('[%s]' % section)
            lines.extend('%s = %s' % kv for kv in values.items())
            lines.append('')
        with open(path, 'w') as f:
            f.write('\n'.join(lines))

    def _run(self, *argv):
        out = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise RuntimeError(
                '%s failed: %s' % (' '.join(argv[:3]), out.stderr[-2000:])
            )
        return out.stdout

    def _spawn(self, name, argv, log):
        f = open(os.path.join(self.workdir, log), 'w')
        proc = subprocess.Popen(
            argv,
            stdout=f,
            stderr=subprocess.STDOUT,
            cwd=self.workdir,
            env=dict(
                os.environ,
                OS_NOVA_CONFIG_DIR=self.workdir,
                OS_PLACEMENT_CONFIG_DIR=self.workdir,
            ),
        )
        self.procs[name] = proc
        return proc

    def start(self, timeout=300):
        dbs = {}
        for name in ('api', 'cell0', 'cell1', 'placement'):
            url, cleanup = infra.mysql_database()
            dbs[name] = url
            self._cleanups.append(cleanup)
        bus, cleanup = infra.rabbit_vhost()
        self._cleanups.append(cleanup)

        self._image_server = _ThreadingServer(('127.0.0.1', 0), _ImageHandler)
        threading.Thread(
            target=self._image_server.serve_forever, daemon=True
        ).start()
        image_url = 'http://127.0.0.1:%d' % self._image_server.server_port
        placement_port = infra.free_port()
        self.placement_url = 'http://127.0.0.1:%d' % placement_port
        api_port = infra.free_port()
        self.api_url = 'http://127.0.0.1:%d' % api_port

        self._conf(
            os.path.join(self.workdir, 'placement.conf'),
            {
                'DEFAULT': {'debug': 'False'},
                'api': {'auth_strategy': 'noauth2'},
                'placement_database': {'connection': dbs['placement']},
            },
        )
        ksa = {'auth_type': 'admin_token', 'token': 'admin'}
        sections = {
            'DEFAULT': {
                'transport_url': bus,
                'compute_driver': 'fake.FakeDriver',
                'debug': 'False',
                'state_path': self.workdir,
                'heal_instance_info_cache_interval': '-1',
            },
            'wsgi': {
                'api_paste_config': os.path.join(self.workdir, 'api-paste.ini')
            },
            'api_database': {'connection': dbs['api']},
            'database': {'connection': dbs['cell1']},
            'placement': dict(ksa, endpoint=self.placement_url),
            'glance': {'endpoint_override': image_url},
            'neutron': {'endpoint_override': image_url},
            'oslo_concurrency': {
                'lock_path': os.path.join(self.workdir, 'locks')
            },
            'oslo_messaging_notifications': {'driver': 'noop'},
            'scheduler': {'discover_hosts_in_cells_interval': '2'},
            # Unlimited, as the Nimbus side is given through its API: Nova
            # checks a quota update's project with Keystone, which this
            # cloud does not run.
            'quota': {'instances': '-1', 'cores': '-1', 'ram': '-1'},
            'os_vif_ovs': {},
        }
        for key, value in self.options.items():
            section, _, name = key.partition('.')
            sections.setdefault(section, {})[name] = value
        self._conf(os.path.join(self.workdir, 'nova.conf'), sections)
        with open(os.path.join(self.workdir, 'api-paste.ini'), 'w') as f:
            f.write(API_PASTE)

        conf = os.path.join(self.workdir, 'nova.conf')
        py = os.path.join(self.bin, 'python')
        self._run(
            os.path.join(self.bin, 'placement-manage'),
            '--config-file',
            os.path.join(self.workdir, 'placement.conf'),
            'db',
            'sync',
        )
        manage = [os.path.join(self.bin, 'nova-manage'), '--config-file', conf]
        self._run(*manage, 'api_db', 'sync')
        self._run(
            *manage,
            'cell_v2',
            'map_cell0',
            '--database_connection',
            dbs['cell0'],
        )
        self._run(
            *manage,
            'cell_v2',
            'create_cell',
            '--name',
            'cell1',
            '--database_connection',
            dbs['cell1'],
            '--transport-url',
            bus,
        )
        self._run(*manage, 'db', 'sync')

        self._spawn(
            'placement',
            [py, '-c', SERVE_PLACEMENT, str(placement_port)],
            'placement.log',
        )
        self._spawn(
            'nova-api',
            [py, '-c', SERVE_NOVA_API, str(api_port)],
            'nova-api.log',
        )
        self._spawn(
            'nova-conductor',
            [os.path.join(self.bin, 'nova-conductor'), '--config-file', conf],
            'nova-conductor.log',
        )
        self._spawn(
            'nova-scheduler',
            [os.path.join(self.bin, 'nova-scheduler'), '--config-file', conf],
            'nova-scheduler.log',
        )
        for i in range(self.computes):
            host_conf = os.path.join(self.workdir, 'compute-%02d.conf' % i)
            self._conf(host_conf, {'DEFAULT': {'host': 'fake-%02d' % i}})
            self._spawn(
                'nova-compute-%02d' % i,
                [
                    os.path.join(self.bin, 'nova-compute'),
                    '--config-file',
                    conf,
                    '--config-file',
                    host_conf,
                ],
                'nova-compute-%02d.log' % i,
            )
        return self

    def client(self, client_class, **kwargs):
        """A compute client (``nimbus.allinone.client.ComputeClient``) for
        this cloud, as the admin of project admin."""
        api = client_class(self.api_url, **kwargs)
        api.session.headers.update(
            {'X-User-Id': 'admin', 'X-Project-Id': 'admin', 'X-Roles': 'admin'}
        )
        return api

    @property
    def processes(self):
        return {name: proc.pid for name, proc in self.procs.items()}

    def stop(self):
        for proc in self.procs.values():
            proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        if self._image_server is not None:
            self._image_server.shutdown()
        for cleanup in reversed(self._cleanups):
            try:
                cleanup()
            except Exception as exc:  # noqa: BLE001
                print('cleanup failed: %s' % exc, file=sys.stderr)


def _wait_computes(api, count, timeout, cloud):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name, proc in cloud.procs.items():
            if proc.poll() is not None:
                raise RuntimeError(
                    '%s exited (%s); see %s'
                    % (name, proc.returncode, cloud.workdir)
                )
        try:
            hypervisors = api.get('/os-hypervisors/detail')['hypervisors']
            if (
                len([h for h in hypervisors if h.get('state') == 'up'])
                >= count
            ):
                return
        except Exception:  # noqa: BLE001 - nova-api still starting
            pass
        time.sleep(2)
    raise RuntimeError('%d Nova computes not up in %d s' % (count, timeout))


def _ratio(numerator, denominator):
    if not numerator or not denominator:
        return None
    return round(numerator / denominator, 1)


def ratios(nimbus, nova):
    """Nimbus against Nova, each as "how many times better": sustained
    boots/s Nimbus over Nova; p50, p99, CPU ms per boot and the
    multi-create's time Nova over Nimbus."""
    rows = []
    for ours, theirs in zip(nimbus['rates'], nova['rates'], strict=False):
        rows.append(
            {
                'offered_per_s': ours['offered_per_s'],
                'sustained': _ratio(
                    ours['sustained_active_per_s'],
                    theirs['sustained_active_per_s'],
                ),
                'p50': _ratio(theirs['p50_s'], ours['p50_s']),
                'p99': _ratio(theirs['p99_s'], ours['p99_s']),
                'cpu_ms_per_boot': _ratio(
                    sum(theirs['cpu_ms_per_boot'].values()),
                    sum(ours['cpu_ms_per_boot'].values()),
                ),
            }
        )
    out = {'rates': rows}
    if 'multi_create' in nimbus and 'multi_create' in nova:
        out['multi_create_all_active'] = _ratio(
            nova['multi_create']['all_active_s'],
            nimbus['multi_create']['all_active_s'],
        )
    return out


def compare(args, nimbus_result, run_phases):
    """Run ``run_phases`` (boot_bench's) against a Nova cloud of
    ``args.hosts`` computes from ``args.compare_nova``; print and answer
    both results and the ratios."""
    from nimbus.allinone.client import ComputeClient

    options = {}
    for item in args.nova_option:
        key, _, value = item.partition('=')
        options[key] = value
    cloud = NovaCloud(args.compare_nova, computes=args.hosts, options=options)
    print(
        '--- OpenStack Nova 34 + Placement 16: %d nova-compute (FakeDriver), '
        'workdir %s' % (args.hosts, cloud.workdir),
        flush=True,
    )
    try:
        cloud.start()
        api = cloud.client(ComputeClient)
        _wait_computes(api, args.hosts, args.start_timeout or 600, cloud)
        nova = run_phases(
            api,
            cloud.processes,
            args,
            options,
            image=IMAGE_ID,
            mode='nova',
            quota=False,
        )
    finally:
        cloud.stop()
    compared = ratios(nimbus_result, nova)
    print('--- Nimbus over Nova (times better)', flush=True)
    for row in compared['rates']:
        print(
            'offered %4d/s: sustained %sx, p50 %sx, p99 %sx, CPU per boot %sx'
            % (
                row['offered_per_s'],
                row['sustained'],
                row['p50'],
                row['p99'],
                row['cpu_ms_per_boot'],
            ),
            flush=True,
        )
    if 'multi_create_all_active' in compared:
        print(
            'multi-create all ACTIVE: %sx'
            % compared['multi_create_all_active'],
            flush=True,
        )
    return {'nimbus': nimbus_result, 'nova': nova, 'ratios': compared}
