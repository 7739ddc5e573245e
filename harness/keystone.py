"""A real Keystone for integration tests: the ``keystone`` package from
PyPI on SQLite, bootstrapped with ``keystone-manage bootstrap`` and served
by gunicorn, with Nimbus's services, endpoints and users in it.

``Keystone(workdir).start()`` gives a running identity service whose admin
is ``admin``/``ADMIN_PASSWORD`` in project ``admin``;
:meth:`Keystone.register_nimbus` adds the service user ``nimbus`` (roles
admin and service in project ``service``) and the compute, image and
placement endpoints; :meth:`Keystone.add_user` adds a member of a project
of its own. :func:`missing` says why Keystone cannot run here (or None).
"""

import os
import shutil
import subprocess
import sys
import time

import requests

from nimbus.testing import daemons

ADMIN_PASSWORD = 'secret-admin'
SERVICE_PASSWORD = 'secret-nimbus'
REGION = 'RegionOne'

_CONF = """[DEFAULT]
log_file = {workdir}/keystone.log
[database]
connection = {connection}
# A few connections (the database server is shared with the daemons).
max_pool_size = 2
max_overflow = 4
[fernet_tokens]
key_repository = {workdir}/fernet-keys
[fernet_receipts]
key_repository = {workdir}/fernet-keys
[credential]
key_repository = {workdir}/credential-keys
[token]
provider = fernet
"""

# keystone's WSGI module parses sys.argv as its own command line, which
# under gunicorn holds gunicorn's options: start it with an empty one.
_WSGI = """import sys
sys.argv = sys.argv[:1]
from keystone.wsgi.api import application  # noqa
"""


def _bin(name):
    """An executable of the running venv, else one on the PATH."""
    local = os.path.join(os.path.dirname(sys.executable), name)
    return local if os.path.exists(local) else shutil.which(name)


def _key_repository(path):
    """A Fernet key repository as keystone-manage sets one up: mode 0700,
    keys ``0`` (staged) and ``1`` (primary), each mode 0600."""
    from cryptography import fernet

    os.makedirs(path, mode=0o700, exist_ok=True)
    os.chmod(path, 0o700)
    for name in ('0', '1'):
        key = os.path.join(path, name)
        if os.path.exists(key):
            continue
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, 'wb') as f:
            f.write(fernet.Fernet.generate_key())


def missing():
    """Why a Keystone cannot be started here, or None."""
    try:
        import keystone  # noqa: F401
    except ImportError:
        return 'the keystone package is not installed'
    for name in ('keystone-manage', 'gunicorn'):
        if _bin(name) is None:
            return '%s is not installed' % name
    return None


class Keystone:
    def __init__(self, workdir, port=None, connection=None):
        """``connection``: Keystone's database URL; by default SQLite in
        ``workdir`` (enough for a few clients; a busy client such as
        Tempest's dynamic credentials wants a database server, where
        SQLite's single writer answers 500s, "database is locked")."""
        self.workdir = os.path.abspath(workdir)
        self.connection = connection or 'sqlite:///%s/keystone.db' % (
            self.workdir
        )
        self.port = port or daemons.free_port()
        self.process = None
        self.config = os.path.join(self.workdir, 'keystone.conf')
        self._log = None

    @property
    def url(self):
        return 'http://127.0.0.1:%d/v3' % self.port

    def _manage(self, *args):
        result = subprocess.run(
            [_bin('keystone-manage'), '--config-file', self.config]
            + list(args),
            capture_output=True,
            text=True,
            timeout=300,
            env=dict(os.environ, PYTHONWARNINGS='ignore'),
        )
        if result.returncode != 0:
            raise RuntimeError(
                'keystone-manage %s failed:\n%s%s'
                % (' '.join(args), result.stdout, result.stderr)
            )

    def start(self, timeout=90):
        os.makedirs(self.workdir, exist_ok=True)
        with open(self.config, 'w') as f:
            f.write(
                _CONF.format(workdir=self.workdir, connection=self.connection)
            )
        with open(os.path.join(self.workdir, 'keystone_wsgi.py'), 'w') as f:
            f.write(_WSGI)
        self._manage('db_sync')
        # What ``keystone-manage fernet_setup`` and ``credential_setup``
        # leave (a staged key 0 and a primary key 1 in a private folder),
        # without two more keystone-manage runs of several seconds each.
        for folder in ('fernet-keys', 'credential-keys'):
            _key_repository(os.path.join(self.workdir, folder))
        self._manage(
            'bootstrap',
            '--bootstrap-password',
            ADMIN_PASSWORD,
            '--bootstrap-admin-url',
            self.url,
            '--bootstrap-internal-url',
            self.url,
            '--bootstrap-public-url',
            self.url,
            '--bootstrap-region-id',
            REGION,
        )
        self._log = open(os.path.join(self.workdir, 'gunicorn.log'), 'w')
        self.process = subprocess.Popen(
            [
                _bin('gunicorn'),
                '--chdir',
                self.workdir,
                '--bind',
                '127.0.0.1:%d' % self.port,
                '--workers',
                '1',
                '--threads',
                '4',
                '--timeout',
                '120',
                'keystone_wsgi:application',
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=dict(
                os.environ,
                OS_KEYSTONE_CONFIG_FILES=self.config,
                PYTHONWARNINGS='ignore',
            ),
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError('keystone exited:\n%s' % self.tail())
            try:
                if requests.get(self.url, timeout=2).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.3)
        raise TimeoutError('keystone did not answer at %s' % self.url)

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._log is not None:
            self._log.close()

    def tail(self, lines=40):
        path = os.path.join(self.workdir, 'gunicorn.log')
        try:
            with open(path, errors='replace') as f:
                return ''.join(f.readlines()[-lines:])
        except FileNotFoundError:
            return ''

    # -- identity data -------------------------------------------------

    def admin(self):
        """An openstacksdk connection as the bootstrap admin."""
        import openstack

        return openstack.connection.Connection(
            auth_url=self.url,
            username='admin',
            password=ADMIN_PASSWORD,
            project_name='admin',
            user_domain_name='Default',
            project_domain_name='Default',
            region_name=REGION,
            identity_api_version='3',
        )

    def _role(self, conn, name):
        return conn.identity.find_role(name) or conn.identity.create_role(
            name=name
        )

    def add_user(self, name, password, project, roles=('member',)):
        conn = self.admin()
        proj = conn.identity.find_project(
            project
        ) or conn.identity.create_project(name=project, domain_id='default')
        user = conn.identity.create_user(
            name=name,
            password=password,
            default_project_id=proj.id,
            domain_id='default',
        )
        for role in roles:
            conn.identity.assign_project_role_to_user(
                proj, user, self._role(conn, role)
            )
        return user.id, proj.id

    def register_nimbus(self, api_url, placement_url):
        """The service user and the compute (``<api>/v2.1``), image
        (``<api>/image``) and placement endpoints."""
        self.add_user(
            'nimbus', SERVICE_PASSWORD, 'service', roles=('admin', 'service')
        )
        conn = self.admin()
        for name, kind, url in (
            ('nova', 'compute', api_url + '/v2.1'),
            ('glance', 'image', api_url + '/image'),
            ('placement', 'placement', placement_url),
        ):
            service = conn.identity.create_service(name=name, type=kind)
            for interface in ('public', 'internal', 'admin'):
                conn.identity.create_endpoint(
                    service_id=service.id,
                    interface=interface,
                    url=url,
                    region_id=REGION,
                )

    def authtoken_options(self):
        """``[keystone_authtoken]`` of the Nimbus daemons, whose
        ``[placement_client]`` points at it with ``auth_section``."""
        return {
            'www_authenticate_uri': self.url,
            'auth_url': self.url,
            'auth_type': 'password',
            'username': 'nimbus',
            'password': SERVICE_PASSWORD,
            'project_name': 'service',
            'user_domain_name': 'Default',
            'project_domain_name': 'Default',
            'region_name': REGION,
        }
