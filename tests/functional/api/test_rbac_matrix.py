"""Who may call every route of the compute API (nimbus/api/handler.py's
route table and the OpenAPI document's), per persona (admin, project
member, project reader, another project's member, no token), under the
legacy policy defaults and the new ones (``enforce_new_defaults`` and
``enforce_scope``), with noauth2 and with keystonemiddleware's auth_token
against a stand-in identity service. A route without an entry in
:data:`MATRIX` fails :func:`test_every_route_has_a_case`.

Each request gets a fresh resource of project p1 (a server placed in
cell1, a server group, a private image, ...), so deletes and updates by
one persona do not change what the next one sees.
"""

import itertools

import pytest

from nimbus.api import handler
from nimbus.api import openapi
from nimbus.common import db as common_db
from nimbus.testing import identity_stub
from nimbus.testing import rbac
from nimbus.testing.rbac import Access
from nimbus.testing.rbac import Case
from tests.functional.api import fixtures

# every route times every persona and policy mode: make check runs a
# seeded sample of the rows (tests/conftest.py), make test-matrix all.
pytestmark = pytest.mark.matrix

V = '/v2.1'
_SEQ = itertools.count(1)
HOST = 'host1'


class World:
    """An :class:`~tests.functional.api.fixtures.ApiFixture` with a flavor,
    an image, a compute host, and makers of fresh p1 resources."""

    def __init__(self, api):
        self.api = api
        # the fake scheduler answers capacity questions too
        api.scheduler.capacity = lambda ctx, spec, per_host=True: {
            'total': 10,
            'hosts': [] if per_host else None,
        }
        self.node = api.add_compute(HOST)
        api.uptimes[HOST] = ' 10:00:00 up 1 days, 2:03,  0 users'
        api.add_flavor('1')
        self.image = api.add_image(visibility='public')
        self.member = rbac.noauth2_headers('member')
        self.admin = rbac.noauth2_headers('admin')

    def call(self, method, path, body=None, headers=None, version=None):
        request_headers = dict(headers or self.admin)
        if version:
            request_headers['OpenStack-API-Version'] = 'compute ' + version
        response = self.api.client.simulate_request(
            method, path, headers=request_headers, json=body
        )
        assert response.status_code < 300, (path, response.text)
        return response.json

    def server(self):
        body = self.call(
            'POST',
            V + '/servers',
            {
                'server': {
                    'name': 'vm%d' % next(_SEQ),
                    'flavorRef': '1',
                    'imageRef': self.image,
                }
            },
            self.member,
        )
        uuid = body['server']['id']
        self.api.place(uuid, host=HOST)
        return uuid

    def group(self):
        body = self.call(
            'POST',
            V + '/os-server-groups',
            {
                'server_group': {
                    'name': 'g%d' % next(_SEQ),
                    'policies': ['anti-affinity'],
                }
            },
            self.member,
        )
        return body['server_group']['id']

    def private_image(self):
        return self.call(
            'POST',
            '/v2/images',
            {'name': 'img%d' % next(_SEQ), 'visibility': 'private'},
            self.member,
        )['id']

    def flavor(self):
        flavor_id = 'f%d' % next(_SEQ)
        self.api.add_flavor(
            flavor_id, name=flavor_id, extra_specs={'hw:cpu_policy': 'shared'}
        )
        return flavor_id

    def keypair(self):
        """A key pair of the member persona's user."""
        name = 'kp%d' % next(_SEQ)
        self.call(
            'POST',
            V + '/os-keypairs',
            {'keypair': {'name': name}},
            self.member,
        )
        return name

    def private_flavor(self):
        flavor_id = 'pf%d' % next(_SEQ)
        self.call(
            'POST',
            V + '/flavors',
            {
                'flavor': {
                    'name': flavor_id,
                    'id': flavor_id,
                    'vcpus': 1,
                    'ram': 64,
                    'disk': 1,
                    'os-flavor-access:is_public': False,
                }
            },
        )
        return flavor_id

    def aggregate(self):
        body = self.call(
            'POST',
            V + '/os-aggregates',
            {'aggregate': {'name': 'a%d' % next(_SEQ)}},
        )
        return body['aggregate']['id']

    def service(self):
        host = 'svc%d' % next(_SEQ)
        self.api.add_service(host, 'nimbus-scheduler')
        services = self.call('GET', V + '/os-services', version='2.53')
        return [s['id'] for s in services['services'] if s['host'] == host][0]


# -- setups: world -> path fields, body, query --------------------------


def _server(world):
    return {'server_id': world.server()}


def _server_action(world):
    """A server of p1 and one of its instance actions (a lock by its
    member), by request id."""
    uuid = world.server()
    response = world.api.client.simulate_request(
        'POST',
        V + '/servers/%s/action' % uuid,
        headers=world.member,
        json={'lock': None},
    )
    assert response.status_code == 202, response.text
    return {
        'server_id': uuid,
        'request_id': response.headers['x-openstack-request-id'],
    }


def _server_migration(world):
    return {'server_id': world.server(), 'migration_id': '1'}


def _group(world):
    return {'group_id': world.group()}


def _image(world):
    return {'image_id': world.private_image()}


def _flavor(world):
    return {'flavor_id': world.flavor()}


def _spec(world):
    return {'flavor_id': world.flavor(), 'key': 'hw:cpu_policy'}


def _aggregate(world):
    return {'aggregate_id': world.aggregate()}


def _service(world):
    return {'service_id': world.service()}


def _owner(world):
    return {'project_id': rbac.OWNER}


def _listed(key):
    """``visible`` for a list of ``key``: is the setup's resource in it?"""

    def visible(payload, params):
        return params['listed'] in {item['id'] for item in payload[key]}

    return visible


def _listed_server(world):
    return {'listed': world.server()}


def _listed_group(world):
    return {'listed': world.group()}


def _listed_image(world):
    return {'listed': world.private_image()}


def _events(world):
    return {
        'body': {
            'events': [
                {'name': 'network-changed', 'server_uuid': world.server()}
            ]
        }
    }


def _upload(world):
    return {
        'image_id': world.private_image(),
        'body': b'image bits',
        'headers': {'Content-Type': 'application/octet-stream'},
    }


def _create_server(world):
    return {
        'body': {
            'server': {
                'name': 'created',
                'flavorRef': '1',
                'imageRef': world.image,
            }
        }
    }


def _dry_run(world):
    return {'body': {'flavorRef': '1', 'imageRef': world.image}}


def _move_dry_run(world):
    return {'body': {'server_id': world.server()}}


PUBLIC = Case(Access.PUBLIC)
ANY = Case(Access.ANY)


def admin(ok=200, **kwargs):
    return Case(Access.ADMIN, ok, **kwargs)


MATRIX = {
    # versions and documents
    ('GET', '/'): PUBLIC,
    ('GET', V): PUBLIC,
    ('GET', V + '/'): PUBLIC,
    ('GET', '/openapi.json'): PUBLIC,
    ('GET', V + '/openapi.json'): PUBLIC,
    # servers
    ('GET', V + '/servers'): Case(
        Access.PROJECT_READ,
        setup=_listed_server,
        other=200,
        visible=_listed('servers'),
    ),
    ('GET', V + '/servers/detail'): Case(
        Access.PROJECT_READ,
        setup=_listed_server,
        other=200,
        visible=_listed('servers'),
    ),
    ('POST', V + '/servers'): Case(
        Access.PROJECT_WRITE, 202, setup=_create_server, other=202
    ),
    ('GET', V + '/servers/{server_id}'): Case(
        Access.PROJECT_READ, setup=_server
    ),
    ('PUT', V + '/servers/{server_id}'): Case(
        Access.PROJECT_WRITE,
        setup=_server,
        body={'server': {'name': 'renamed'}},
    ),
    ('DELETE', V + '/servers/{server_id}'): Case(
        Access.PROJECT_WRITE, 204, setup=_server
    ),
    # server actions (os-stop stands for the owner's; os-resetState is
    # the admins')
    ('POST', V + '/servers/{server_id}/action'): Case(
        Access.PROJECT_WRITE, 202, setup=_server, body={'os-stop': None}
    ),
    ('GET', V + '/servers/{server_id}/os-instance-actions'): Case(
        Access.PROJECT_READ, setup=_server
    ),
    ('GET', V + '/servers/{server_id}/os-instance-actions/{request_id}'): Case(
        Access.PROJECT_READ, setup=_server_action
    ),
    ('GET', V + '/servers/{server_id}/diagnostics'): admin(
        setup=_server, hidden=True
    ),
    # a server's live migrations (admins'): none in progress here, so an
    # admin gets the empty list, a 404 for a migration and a 409 (not
    # migrating) for the abort and the force complete.
    ('GET', V + '/servers/{server_id}/migrations'): admin(
        setup=_server, hidden=True, version='2.23'
    ),
    ('GET', V + '/servers/{server_id}/migrations/{migration_id}'): admin(
        404, setup=_server_migration, hidden=True, version='2.23'
    ),
    ('DELETE', V + '/servers/{server_id}/migrations/{migration_id}'): admin(
        409, setup=_server_migration, hidden=True, version='2.24'
    ),
    (
        'POST',
        V + '/servers/{server_id}/migrations/{migration_id}/action',
    ): admin(
        409,
        setup=_server_migration,
        hidden=True,
        version='2.22',
        body={'force_complete': None},
    ),
    # flavors: everyone reads, admins write
    ('GET', V + '/flavors'): ANY,
    ('GET', V + '/flavors/detail'): ANY,
    ('POST', V + '/flavors'): admin(
        setup=lambda w: {
            'body': {
                'flavor': {
                    'name': 'new%d' % next(_SEQ),
                    'vcpus': 1,
                    'ram': 64,
                    'disk': 1,
                }
            }
        }
    ),
    ('GET', V + '/flavors/{flavor_id}'): Case(Access.ANY, setup=_flavor),
    ('PUT', V + '/flavors/{flavor_id}'): admin(
        setup=_flavor, body={'flavor': {'description': 'd'}}, version='2.55'
    ),
    ('DELETE', V + '/flavors/{flavor_id}'): admin(202, setup=_flavor),
    ('GET', V + '/flavors/{flavor_id}/os-extra_specs'): Case(
        Access.ANY, setup=_flavor
    ),
    ('POST', V + '/flavors/{flavor_id}/os-extra_specs'): admin(
        setup=_flavor, body={'extra_specs': {'hw:cpu_policy': 'dedicated'}}
    ),
    ('GET', V + '/flavors/{flavor_id}/os-extra_specs/{key}'): Case(
        Access.ANY, setup=_spec
    ),
    ('PUT', V + '/flavors/{flavor_id}/os-extra_specs/{key}'): admin(
        setup=_spec, body={'hw:cpu_policy': 'dedicated'}
    ),
    ('DELETE', V + '/flavors/{flavor_id}/os-extra_specs/{key}'): admin(
        setup=_spec
    ),
    # key pairs: each user's own (an admin names the user, 2.10)
    ('GET', V + '/os-keypairs'): Case(
        Access.USER_OWNED,
        query='user_id=' + rbac.IDENTITIES['member'][0],
        version='2.10',
    ),
    ('POST', V + '/os-keypairs'): Case(
        Access.ANY,
        201,
        setup=lambda w: {'body': {'keypair': {'name': 'new%d' % next(_SEQ)}}},
        version='2.10',
    ),
    ('GET', V + '/os-keypairs/{keypair_name}'): Case(
        Access.USER_OWNED,
        setup=lambda w: {
            'keypair_name': w.keypair(),
            'query': 'user_id=' + rbac.IDENTITIES['member'][0],
        },
        version='2.10',
    ),
    ('DELETE', V + '/os-keypairs/{keypair_name}'): Case(
        Access.USER_OWNED,
        204,
        setup=lambda w: {
            'keypair_name': w.keypair(),
            'query': 'user_id=' + rbac.IDENTITIES['member'][0],
        },
        version='2.10',
    ),
    # flavor access: admins only
    ('GET', V + '/flavors/{flavor_id}/os-flavor-access'): admin(
        setup=lambda w: {'flavor_id': w.private_flavor()}
    ),
    ('POST', V + '/flavors/{flavor_id}/action'): admin(
        setup=lambda w: {
            'flavor_id': w.private_flavor(),
            'body': {'addTenantAccess': {'tenant': 'p9'}},
        }
    ),
    # services and hypervisors
    ('GET', V + '/os-services'): admin(),
    ('PUT', V + '/os-services/{service_id}'): admin(
        setup=_service, body={'status': 'disabled'}, version='2.53'
    ),
    ('DELETE', V + '/os-services/{service_id}'): admin(
        204, setup=_service, version='2.53'
    ),
    ('GET', V + '/os-migrations'): admin(),
    ('GET', V + '/os-hypervisors'): admin(),
    ('GET', V + '/os-hypervisors/detail'): admin(),
    ('GET', V + '/os-hypervisors/statistics'): admin(),
    ('GET', V + '/os-hypervisors/{hypervisor_id}'): admin(
        setup=lambda w: {'hypervisor_id': w.node}, version='2.53'
    ),
    ('GET', V + '/os-hypervisors/{hypervisor_id}/uptime'): admin(
        setup=lambda w: {'hypervisor_id': w.node}, version='2.53'
    ),
    ('GET', V + '/os-hypervisors/{hypervisor_id}/search'): admin(
        setup=lambda w: {'hypervisor_id': HOST}
    ),
    ('GET', V + '/os-hypervisors/{hypervisor_id}/servers'): admin(
        setup=lambda w: {'hypervisor_id': HOST}
    ),
    # aggregates and zones
    ('GET', V + '/os-aggregates'): admin(),
    ('POST', V + '/os-aggregates'): admin(
        setup=lambda w: {'body': {'aggregate': {'name': 'agg%d' % next(_SEQ)}}}
    ),
    ('GET', V + '/os-aggregates/{aggregate_id}'): admin(setup=_aggregate),
    ('PUT', V + '/os-aggregates/{aggregate_id}'): admin(
        setup=lambda w: {
            'aggregate_id': w.aggregate(),
            'body': {'aggregate': {'name': 'renamed%d' % next(_SEQ)}},
        }
    ),
    ('DELETE', V + '/os-aggregates/{aggregate_id}'): admin(setup=_aggregate),
    ('POST', V + '/os-aggregates/{aggregate_id}/action'): admin(
        setup=_aggregate, body={'set_metadata': {'metadata': {'k': 'v'}}}
    ),
    ('GET', V + '/os-availability-zone'): ANY,
    ('GET', V + '/os-availability-zone/detail'): admin(),
    # server groups
    ('GET', V + '/os-server-groups'): Case(
        Access.PROJECT_READ,
        setup=_listed_group,
        other=200,
        visible=_listed('server_groups'),
    ),
    ('POST', V + '/os-server-groups'): Case(
        Access.PROJECT_WRITE,
        body={'server_group': {'name': 'g', 'policies': ['affinity']}},
        other=200,
    ),
    ('GET', V + '/os-server-groups/{group_id}'): Case(
        Access.PROJECT_READ, setup=_group
    ),
    ('DELETE', V + '/os-server-groups/{group_id}'): Case(
        Access.PROJECT_WRITE, 204, setup=_group
    ),
    # external events: services and admins
    ('POST', V + '/os-server-external-events'): Case(
        Access.SERVICE, setup=_events
    ),
    # scheduler (Nimbus): admins
    ('POST', V + '/os-scheduler/dry-run'): admin(setup=_dry_run),
    ('POST', V + '/os-scheduler/move-dry-run'): admin(setup=_move_dry_run),
    ('GET', V + '/os-scheduler/records'): admin(query='request_id=r'),
    ('GET', V + '/os-scheduler/capacity'): admin(query='flavor=1'),
    # quotas, limits and usage
    ('GET', V + '/limits'): ANY,
    ('GET', V + '/os-quota-sets/{project_id}'): Case(
        Access.PROJECT_READ, setup=_owner, other=403
    ),
    ('PUT', V + '/os-quota-sets/{project_id}'): admin(
        setup=_owner, body={'quota_set': {'instances': -1}}
    ),
    ('DELETE', V + '/os-quota-sets/{project_id}'): admin(202, setup=_owner),
    ('GET', V + '/os-quota-sets/{project_id}/detail'): Case(
        Access.PROJECT_READ, setup=_owner, other=403
    ),
    ('GET', V + '/os-quota-sets/{project_id}/defaults'): Case(
        Access.ANY, setup=_owner
    ),
    ('GET', V + '/os-quota-class-sets/{class_name}'): admin(
        setup=lambda w: {'class_name': 'default'}
    ),
    ('PUT', V + '/os-quota-class-sets/{class_name}'): admin(
        setup=lambda w: {'class_name': 'default'},
        body={'quota_class_set': {'instances': -1}},
    ),
    ('GET', V + '/os-simple-tenant-usage'): admin(),
    ('GET', V + '/os-simple-tenant-usage/{project_id}'): Case(
        Access.PROJECT_READ, setup=_owner, other=403
    ),
    ('GET', V + '/os-hosts'): admin(),
    ('GET', V + '/os-hosts/{host_name}'): admin(
        setup=lambda w: {'host_name': HOST}
    ),
    ('PUT', V + '/os-hosts/{host_name}'): admin(
        setup=lambda w: {'host_name': HOST}, body={'status': 'enable'}
    ),
    # The power actions: an admin gets Nova's answer for a virt driver
    # that cannot do them.
    ('GET', V + '/os-hosts/{host_name}/reboot'): admin(
        501, setup=lambda w: {'host_name': HOST}
    ),
    ('GET', V + '/os-hosts/{host_name}/shutdown'): admin(
        501, setup=lambda w: {'host_name': HOST}
    ),
    ('GET', V + '/os-hosts/{host_name}/startup'): admin(
        501, setup=lambda w: {'host_name': HOST}
    ),
    ('GET', V + '/os-instance_usage_audit_log'): admin(),
    ('GET', V + '/os-instance_usage_audit_log/{before_timestamp}'): admin(
        setup=lambda w: {'before_timestamp': '2026-01-01T00:00:00'}
    ),
    ('GET', V + '/os-cells'): admin(),
    # the dashboard: page and assets public, data for admins
    ('GET', '/dashboard'): Case(Access.PUBLIC, 301),
    ('GET', '/dashboard/'): PUBLIC,
    ('GET', '/dashboard/static/{name}'): Case(
        Access.PUBLIC, setup=lambda w: {'name': 'dashboard.js'}
    ),
    ('GET', '/dashboard/api/hosts'): admin(),
    ('GET', '/dashboard/api/failures'): admin(),
    ('GET', '/dashboard/api/capacity'): admin(query='flavor=1'),
    ('GET', '/dashboard/api/decisions'): admin(),
    # no decision stream in this fixture: past the policy, a 503
    ('GET', '/dashboard/api/events'): admin(503),
}

# The images API, at /v2 and under the image endpoint's prefix.
_IMAGE_CASES = {
    ('GET', '/v2'): PUBLIC,
    ('GET', '/v2/'): PUBLIC,
    ('GET', '/v2/images'): Case(
        Access.PROJECT_READ,
        setup=_listed_image,
        other=200,
        visible=_listed('images'),
    ),
    ('POST', '/v2/images'): Case(
        Access.PROJECT_WRITE, 201, body={'name': 'new'}, other=201
    ),
    ('GET', '/v2/images/{image_id}'): Case(Access.PROJECT_READ, setup=_image),
    ('PUT', '/v2/images/{image_id}'): Case(
        Access.PROJECT_WRITE, setup=_image, body={'name': 'renamed'}
    ),
    ('PATCH', '/v2/images/{image_id}'): Case(
        Access.PROJECT_WRITE,
        setup=lambda w: dict(
            _image(w),
            headers={
                'Content-Type': 'application/openstack-images-v2.1-json-patch'
            },
            body=b'[{"op": "replace", "path": "/name", "value": "x"}]',
        ),
    ),
    ('DELETE', '/v2/images/{image_id}'): Case(
        Access.PROJECT_WRITE, 204, setup=_image
    ),
    ('GET', '/v2/images/{image_id}/tasks'): Case(
        Access.PROJECT_READ, setup=_image
    ),
    ('GET', '/v2/images/{image_id}/file'): Case(
        Access.PROJECT_READ, 204, setup=_image
    ),
    ('PUT', '/v2/images/{image_id}/file'): Case(
        Access.PROJECT_WRITE, 204, setup=_upload
    ),
}


def _image_prefixed():
    from nimbus.api.handlers import image_data

    cases = dict(_IMAGE_CASES)
    for (method, path), case in _IMAGE_CASES.items():
        cases[(method, image_data.PREFIX + path)] = case
    cases[('GET', image_data.PREFIX)] = PUBLIC
    cases[('GET', image_data.PREFIX + '/')] = PUBLIC
    return cases


def _identity():
    from nimbus.api.handlers import identity

    cases = {('GET', path): PUBLIC for path in identity.PATHS}
    # noauth2's project lookups: any token (a project is what it names)
    cases[('GET', identity.PROJECTS)] = ANY
    cases[('GET', identity.PROJECT)] = Case(
        Access.ANY, setup=lambda world: {'project_id': 'p1'}
    )
    return cases


MATRIX.update(_image_prefixed())
# the compute API's image proxy (up to 2.35): the image API's rules
MATRIX[('GET', '/v2.1/images/{image_id}')] = Case(
    Access.PROJECT_READ, setup=_image
)
MATRIX[('DELETE', '/v2.1/images/{image_id}')] = Case(
    Access.PROJECT_WRITE, 204, setup=_image
)
MATRIX.update(_identity())
ROUTES = handler.ROUTES + openapi.ROUTES


def test_every_route_has_a_case():
    without_case, without_route = rbac.missing(ROUTES, MATRIX)
    assert without_case == [], 'routes missing from the RBAC matrix'
    assert without_route == [], 'matrix entries for routes that do not exist'


# every persona creates servers and groups, more than Nova's quotas allow
UNLIMITED = (
    '[quota]\ninstances = -1\ncores = -1\nram = -1\nserver_groups = -1\n'
)


# -- the apps -----------------------------------------------------------


def _send(client):
    def send(method, url, headers, body, version):
        path, _, query = url.partition('?')
        headers = dict(headers)
        if version:
            headers['OpenStack-API-Version'] = 'compute ' + version
        kwargs = {'headers': headers, 'query_string': query or None}
        if isinstance(body, bytes):
            kwargs['body'] = body
        elif body is not None:
            kwargs['json'] = body
        response = client.simulate_request(method, path, **kwargs)
        try:
            payload = response.json
        except Exception:
            payload = response.text[:200]
        return response.status_code, payload

    return send


@pytest.fixture(scope='module', params=rbac.MODES)
def noauth2(request, tmp_path_factory):
    mode = request.param
    api = fixtures.ApiFixture(
        tmp_path_factory.mktemp('rbac-' + mode),
        config_text=rbac.policy_config_text(mode) + UNLIMITED,
    )
    yield mode, World(api), _send(api.client), rbac.noauth2_headers
    common_db.dispose_all()


@pytest.mark.parametrize(
    'method,path', sorted(MATRIX), ids=['%s %s' % k for k in sorted(MATRIX)]
)
def test_noauth2(noauth2, method, path):
    mode, world, send, headers = noauth2
    problems = rbac.check(
        MATRIX[(method, path)], method, path, send, headers, mode, world
    )
    assert problems == [], '\n'.join(problems)


# -- keystonemiddleware's auth_token and a stand-in identity service ----


@pytest.fixture(scope='module', params=rbac.MODES)
def keystone(request, tmp_path_factory):
    mode = request.param
    stub = identity_stub.IdentityStub().start()
    tokens = {}
    for persona, (user, project, roles) in rbac.IDENTITIES.items():
        tokens[persona] = stub.add_token(
            'tok-%s-%s' % (persona, mode), user, project, roles
        )
    text = stub.config_text() + rbac.policy_config_text(mode) + UNLIMITED
    api = fixtures.ApiFixture(
        tmp_path_factory.mktemp('rbac-ks-' + mode),
        overrides={'api': {'auth_strategy': 'keystone'}},
        config_text=text,
    )

    def headers(persona):
        if persona == 'anonymous':
            return {}
        # what a client claims is ignored: roles come from the token
        return {'X-Auth-Token': tokens[persona], 'X-Roles': 'admin'}

    world = World(api)
    world.member = headers('member')
    world.admin = headers('admin')
    yield mode, world, _send(api.client), headers, stub
    stub.stop()
    common_db.dispose_all()


@pytest.mark.parametrize(
    'method,path', sorted(MATRIX), ids=['%s %s' % k for k in sorted(MATRIX)]
)
def test_keystone_auth_token(keystone, method, path):
    from nimbus.api.handlers import identity

    mode, world, send, headers, stub = keystone
    case = MATRIX[(method, path)]
    if path in identity.PATHS:
        # noauth2's stand-in identity document; Keystone serves its own
        case = Case(Access.PUBLIC, 404)
    elif path in (identity.PROJECTS, identity.PROJECT):
        # noauth2's project lookups; Keystone answers its own
        case = Case(Access.ANY, 404, setup=lambda world: {'project_id': 'p1'})
    problems = rbac.check(case, method, path, send, headers, mode, world)
    assert problems == [], '\n'.join(problems)
    # the middleware asked the identity service (or its cache did)
    if case.access is not rbac.Access.PUBLIC:
        # the token was checked by the identity service (a public route
        # run first in this worker would have validated none yet)
        assert stub.validations > 0
