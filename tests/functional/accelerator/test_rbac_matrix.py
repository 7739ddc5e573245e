"""Who may call every route of the accelerator API (its route table, at the
root and under ``/accelerator``), per persona (admin, project member,
project reader, another project's member, no token, and here also the
service role alone and a system-scoped admin), under the legacy and the
new policy defaults, with noauth2 and with keystonemiddleware's
auth_token against a stand-in identity service. Device profiles are read
by any project's reader and written by admins only; accelerator requests
belong to their project; binding, unbinding, deleting a bound one and
deleting by instance are for the service role only (an admin without it
gets 403, as from Cyborg); devices and deployables for admins and
services. A system-scoped token gets 403 under the new defaults (every
rule is project-scoped). A route without an entry in :data:`MATRIX` fails
:func:`test_every_route_has_a_case`.
"""

import dataclasses
import itertools

import falcon.testing
import orjson
import pytest
from oslo_policy import opts as policy_opts

from nimbus.accelerator import binder as binder_mod
from nimbus.accelerator.api import handler
from nimbus.accelerator.api import wsgi
from nimbus.accelerator.api.handlers import util as accel_util
from nimbus.accelerator.objects import device as device_obj
from nimbus.common import config
from nimbus.testing import identity_stub
from nimbus.testing import rbac
from nimbus.testing.rbac import Access
from nimbus.testing.rbac import Case
from tests.functional.accelerator import conftest

# every route times every persona and policy mode: make check runs a
# seeded sample of the rows (tests/conftest.py), make test-matrix all.
pytestmark = pytest.mark.matrix

_SEQ = itertools.count(1)
DPS = '/v2/device_profiles'
ARQS = '/v2/accelerator_requests'
DEVICE = conftest.device(conftest.HOST, 0, handles=64)
RP = DEVICE['deployables'][0]['rp_uuid']
_JSON = {'Content-Type': 'application/json'}
SERVICE = {'X-Auth-Token': 'nimbus:service', 'X-Roles': 'service'}
# the matrix's personas and two more: the service role alone (what
# Nimbus's conductors and computes present) and a system-scoped admin
PERSONAS = rbac.PERSONAS + ('service', 'system')


@dataclasses.dataclass
class AccelCase(Case):
    """A case with the two extra personas; ``service_only``: the service
    role and nobody else (admins included) may call it; another
    project's member then gets ``other`` (403 from the policy, or 404
    where the ARQ is looked up first: it does not exist for them)."""

    service_only: bool = False

    def expected(self, persona, mode):
        if persona == 'anonymous' or self.access is Access.PUBLIC:
            return super().expected(persona, mode)
        if persona == 'system':
            # every rule is project-scoped, and oslo.policy 6 always
            # enforces scope (it has no enforce_scope option any more)
            return 403
        if persona == 'service':
            return 403 if self.access is Access.ADMIN else self.ok
        if self.service_only:
            return self.other if persona == 'other' else 403
        return super().expected(persona, mode)


def _noauth2_headers(persona):
    if persona == 'service':
        return dict(SERVICE)
    if persona == 'system':
        return {
            'X-Auth-Token': 'admin',
            'X-Roles': 'admin,member,reader',
            'OpenStack-System-Scope': 'all',
        }
    return rbac.noauth2_headers(persona)


class World:
    def __init__(self, client, admin, member, service):
        self.client = client
        self.admin = admin
        self.member = member
        self.service = service

    def call(self, method, path, body=None, headers=None):
        response = self.client.simulate_request(
            method,
            path,
            headers=dict(headers or self.admin, **_JSON),
            body=None if body is None else orjson.dumps(body),
        )
        assert response.status_code < 300, (path, response.text)
        return response.json

    def profile(self):
        name = 'fpga-%d' % next(_SEQ)
        body = self.call(
            'POST', DPS, [{'name': name, 'groups': [{'resources:FPGA': '1'}]}]
        )
        return name, body['uuid']

    def arq(self):
        name, _ = self.profile()
        body = self.call(
            'POST', ARQS, {'device_profile_name': name}, self.member
        )
        return body['arqs'][0]['uuid']

    def attribute(self):
        body = self.call(
            'POST',
            '/v2/attributes',
            {'deployable_id': 1, 'key': 'k%d' % next(_SEQ), 'value': 'v'},
        )
        return body['uuid']

    def bound_arq(self):
        """A p1 ARQ bound (BindStarted) to a new instance by the service."""
        uuid = self.arq()
        self.call('PATCH', ARQS, _bind_patch(uuid), self.service)
        return uuid


def _profile(world):
    return {'uuid': world.profile()[1]}


def _arq(world):
    return {'uuid': world.arq()}


def _listed_arq(world):
    return {'listed': world.arq()}


def _arq_visible(payload, params):
    return params['listed'] in {a['uuid'] for a in payload['arqs']}


def _create_arqs(world):
    return {'body': {'device_profile_name': world.profile()[0]}}


def _bind(world):
    return {'body': _bind_patch(world.arq())}


def _bind_one(world):
    uuid = world.arq()
    return {'uuid': uuid, 'body': _bind_patch(uuid)}


def _unbind(world):
    uuid = world.bound_arq()
    return {'body': {uuid: [{'path': '/instance_uuid', 'op': 'remove'}]}}


def _bind_patch(uuid):
    return {
        uuid: [
            {'path': '/hostname', 'op': 'add', 'value': conftest.HOST},
            {'path': '/device_rp_uuid', 'op': 'add', 'value': RP},
            {
                'path': '/instance_uuid',
                'op': 'add',
                'value': '6a9d8e39-3d1f-4d5c-9a55-%012d' % next(_SEQ),
            },
        ]
    }


def _device(world):
    return {'uuid': DEVICE['uuid']}


def _deployable(world):
    return {'uuid': DEVICE['deployables'][0]['uuid']}


PUBLIC = AccelCase(Access.PUBLIC)
# no deprecated rules here: a reader never writes, whatever the mode
STRICT = {'legacy_reader_writes': False}

MATRIX = {
    ('GET', '/'): PUBLIC,
    ('GET', '/v2'): PUBLIC,
    ('GET', '/v2/'): PUBLIC,
    # device profiles: every project reads them, admins write them
    ('GET', DPS): AccelCase(Access.PROJECT_READ, other=200),
    ('POST', DPS): AccelCase(
        Access.ADMIN,
        201,
        setup=lambda w: {
            'body': [
                {
                    'name': 'new-%d' % next(_SEQ),
                    'groups': [{'resources:FPGA': '1'}],
                }
            ]
        },
    ),
    ('DELETE', DPS): AccelCase(
        Access.ADMIN, 204, setup=lambda w: {'query': 'value=' + w.profile()[0]}
    ),
    ('GET', DPS + '/{uuid}'): AccelCase(
        Access.PROJECT_READ, setup=_profile, other=200
    ),
    ('DELETE', DPS + '/{uuid}'): AccelCase(Access.ADMIN, 204, setup=_profile),
    # accelerator requests: their project's
    ('GET', ARQS): AccelCase(
        Access.PROJECT_READ, setup=_listed_arq, other=200, visible=_arq_visible
    ),
    ('POST', ARQS): AccelCase(
        Access.PROJECT_WRITE, 201, setup=_create_arqs, other=201, **STRICT
    ),
    ('PATCH', ARQS): AccelCase(
        Access.SERVICE, 202, setup=_bind, service_only=True, other=403
    ),
    ('DELETE', ARQS): AccelCase(
        Access.PROJECT_WRITE,
        204,
        setup=lambda w: {'query': 'arqs=' + w.arq()},
        **STRICT,
    ),
    ('GET', ARQS + '/{uuid}'): AccelCase(Access.PROJECT_READ, setup=_arq),
    # openstacksdk's bind and unbind (python-cyborgclient's arq bind)
    ('PATCH', ARQS + '/{uuid}'): AccelCase(
        Access.SERVICE, 202, setup=_bind_one, service_only=True, other=403
    ),
    ('DELETE', ARQS + '/{uuid}'): AccelCase(
        Access.PROJECT_WRITE, 204, setup=_arq, **STRICT
    ),
    # devices and deployables: admins and services
    ('GET', '/v2/devices'): AccelCase(Access.SERVICE),
    ('GET', '/v2/devices/{uuid}'): AccelCase(Access.SERVICE, setup=_device),
    ('GET', '/v2/deployables'): AccelCase(Access.SERVICE),
    ('GET', '/v2/deployables/{uuid}'): AccelCase(
        Access.SERVICE, setup=_deployable
    ),
    # attributes: admins (Cyborg reads them to a project manager too)
    ('GET', '/v2/attributes'): AccelCase(Access.ADMIN),
    ('POST', '/v2/attributes'): AccelCase(
        Access.ADMIN,
        201,
        setup=lambda w: {
            'body': {
                'deployable_id': 1,
                'key': 'k%d' % next(_SEQ),
                'value': 'v',
            }
        },
    ),
    ('GET', '/v2/attributes/{uuid}'): AccelCase(
        Access.ADMIN, setup=lambda w: {'uuid': w.attribute()}
    ),
    ('DELETE', '/v2/attributes/{uuid}'): AccelCase(
        Access.ADMIN, 204, setup=lambda w: {'uuid': w.attribute()}
    ),
}

# Routes whose query string selects another rule.
EXTRA = {
    'DELETE ?instance=': (
        'DELETE',
        ARQS,
        AccelCase(
            Access.SERVICE,
            204,
            query='instance=6a9d8e39-3d1f-4d5c-9a55-1f4b3c2d1e0f',
            service_only=True,
            other=403,
        ),
    ),
    # the state of the ARQ selects the rule: a bound one is the service's
    'DELETE ?arqs=<bound>': (
        'DELETE',
        ARQS,
        AccelCase(
            Access.SERVICE,
            204,
            setup=lambda w: {'query': 'arqs=' + w.bound_arq()},
            service_only=True,
        ),
    ),
    'DELETE /{uuid} <bound>': (
        'DELETE',
        ARQS + '/{uuid}',
        AccelCase(
            Access.SERVICE,
            204,
            setup=lambda w: {'uuid': w.bound_arq()},
            service_only=True,
        ),
    ),
    'PATCH unbind': (
        'PATCH',
        ARQS,
        AccelCase(
            Access.SERVICE, 202, setup=_unbind, service_only=True, other=403
        ),
    ),
}


def test_every_route_has_a_case():
    without_case, without_route = rbac.missing(handler.ROUTES, MATRIX)
    assert without_case == [], 'routes missing from the RBAC matrix'
    assert without_route == [], 'matrix entries for routes that do not exist'
    # the same table is served under /accelerator
    assert rbac.route_methods(handler.routes(None)) == {
        (method, prefix + ('' if path == '/' and prefix else path))
        for method, path in rbac.route_methods(handler.ROUTES)
        for prefix in ('', accel_util.PREFIX)
    }


def _send(client):
    def send(method, url, headers, body, version):
        path, _, query = url.partition('?')
        response = client.simulate_request(
            method,
            path,
            headers=dict(headers, **_JSON),
            query_string=query or None,
            body=None if body is None else orjson.dumps(body),
        )
        try:
            payload = response.json
        except Exception:
            payload = response.text[:200]
        return response.status_code, payload

    return send


def _app(tmp_path, mode, strategy, config_text=''):
    path = tmp_path / 'nimbus.conf'
    path.write_text(rbac.policy_config_text(mode) + config_text)
    conf = config.build_conf(['--config-file', str(path)])
    policy_opts._register(conf)
    conf.set_override(
        'connection',
        'sqlite:///%s' % (tmp_path / 'accelerator.sqlite'),
        group='accelerator_database',
    )
    conf.set_override('auth_strategy', strategy, group='api')
    adb = wsgi.make_adb(conf)
    agent, events = conftest.Agent(), conftest.Events()
    binder = binder_mod.Binder(adb, agent, events)
    app = wsgi.make_app(conf, binder=binder, agent=agent, adb=adb)
    device_obj.report(adb, conftest.HOST, [DEVICE])
    return falcon.testing.TestClient(app)


def _check(method, path, case, mode, world, send, headers):
    problems = []
    for prefix in ('', accel_util.PREFIX):
        full = prefix + ('' if path == '/' and prefix else path)
        problems += rbac.check(
            case, method, full, send, headers, mode, world, PERSONAS
        )
    return problems


@pytest.fixture(scope='module', params=rbac.MODES)
def noauth2(request, tmp_path_factory):
    mode = request.param
    client = _app(tmp_path_factory.mktemp('accel-' + mode), mode, 'noauth2')

    headers = _noauth2_headers
    world = World(
        client, headers('admin'), headers('member'), headers('service')
    )
    return mode, world, _send(client), headers


KEYS = sorted(MATRIX)
IDS = ['%s %s' % k for k in KEYS]


@pytest.mark.parametrize('method,path', KEYS, ids=IDS)
def test_noauth2(noauth2, method, path):
    mode, world, send, headers = noauth2
    problems = _check(
        method, path, MATRIX[(method, path)], mode, world, send, headers
    )
    assert problems == [], '\n'.join(problems)


@pytest.mark.parametrize('name', sorted(EXTRA))
def test_noauth2_by_query(noauth2, name):
    mode, world, send, headers = noauth2
    method, path, case = EXTRA[name]
    problems = _check(method, path, case, mode, world, send, headers)
    assert problems == [], '\n'.join(problems)


@pytest.fixture(scope='module', params=rbac.MODES)
def keystone(request, tmp_path_factory):
    mode = request.param
    stub = identity_stub.IdentityStub().start()
    tokens = {
        persona: stub.add_token(
            'tok-%s-%s' % (persona, mode), user, project, roles
        )
        for persona, (user, project, roles) in rbac.IDENTITIES.items()
    }
    tokens['service'] = stub.add_token(
        'tok-service-' + mode, 'nimbus', 'service', ['service']
    )
    tokens['service-token'] = stub.add_token(
        'tok-service-token-' + mode, 'nova', 'service', ['service']
    )
    tokens['system'] = stub.add_token(
        'tok-system-' + mode,
        'admin',
        None,
        ['admin', 'member', 'reader'],
        system=True,
    )
    client = _app(
        tmp_path_factory.mktemp('accel-ks-' + mode),
        mode,
        'keystone',
        stub.config_text(),
    )

    def headers(persona):
        if persona == 'anonymous':
            return {}
        # what a client claims is ignored: roles come from the token
        return {'X-Auth-Token': tokens[persona], 'X-Roles': 'admin'}

    world = World(
        client, headers('admin'), headers('member'), headers('service')
    )
    yield mode, world, _send(client), headers, stub
    stub.stop()


@pytest.mark.parametrize('method,path', KEYS, ids=IDS)
def test_keystone_auth_token(keystone, method, path):
    mode, world, send, headers, stub = keystone
    problems = _check(
        method, path, MATRIX[(method, path)], mode, world, send, headers
    )
    assert problems == [], '\n'.join(problems)
    if MATRIX[(method, path)].access is not rbac.Access.PUBLIC:
        # the token was checked by the identity service (a public route
        # run first in this worker would have validated none yet)
        assert stub.validations > 0


@pytest.mark.parametrize('name', sorted(EXTRA))
def test_keystone_by_query(keystone, name):
    mode, world, send, headers, _stub = keystone
    method, path, case = EXTRA[name]
    problems = _check(method, path, case, mode, world, send, headers)
    assert problems == [], '\n'.join(problems)


def test_keystone_service_token_along_a_users_token(keystone):
    """Nova's way to Cyborg: the user's token and a service token
    (``X-Service-Token``); auth_token validates both and says the service
    roles. A forged ``X-Service-Roles`` without a service token is
    dropped."""
    mode, world, send, headers, stub = keystone
    member = headers('member')
    forged = dict(member, **{'X-Service-Roles': 'service'})
    assert send('PATCH', ARQS, forged, _bind(world)['body'], None)[0] == 403
    with_service = dict(
        member, **{'X-Service-Token': headers('service-token')['X-Auth-Token']}
    )
    assert (
        send('PATCH', ARQS, with_service, _bind(world)['body'], None)[0] == 202
    )
