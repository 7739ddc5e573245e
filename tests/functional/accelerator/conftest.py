"""The accelerator API in process: a migrated SQLite database, noauth2,
a binder with a fake agent (the agent's RPC API) and a recording events
client, driven explicitly (``api.bind_pass()``)."""

import falcon.testing
import orjson
import pytest
from oslo_policy import opts as policy_opts

from nimbus.accelerator import binder as binder_mod
from nimbus.accelerator.api import wsgi
from nimbus.accelerator.objects import device as device_obj
from nimbus.common import config

ADMIN = {'X-Auth-Token': 'admin:admin-project', 'X-Roles': 'admin'}
SERVICE = {'X-Auth-Token': 'nimbus:service', 'X-Roles': 'service'}
MEMBER = {'X-Auth-Token': 'alice:p1', 'X-Roles': 'member'}
# a user's token with a service token sent along (Nova's way to Cyborg):
# keystonemiddleware sets X-Service-Roles from the service token
SERVICE_TOKEN = dict(MEMBER, **{'X-Service-Roles': 'service'})
OTHER_MEMBER = {'X-Auth-Token': 'bob:p2', 'X-Roles': 'member'}
READER = {'X-Auth-Token': 'carol:p1', 'X-Roles': 'reader'}
# a user with a role that grants nothing (no X-Roles would be a member)
NOBODY = {'X-Auth-Token': 'dave:p1', 'X-Roles': 'observer'}

HOST = 'compute1'
# The keys of a device in /v2/devices answers, as Cyborg's API reference
# has them. Written out, not taken from the handler's KEYS: a change to
# what the handler sends must fail the tests that use this.
DEVICE_KEYS = {
    'uuid',
    'type',
    'vendor',
    'model',
    'std_board_info',
    'vendor_board_info',
    'hostname',
    'links',
    'created_at',
    'updated_at',
}
INSTANCE = '6a9d8e39-3d1f-4d5c-9a55-1f4b3c2d1e0f'


class Agent:
    def __init__(self):
        self.programmed, self.released = [], []
        self.fail = None

    def program(self, ctxt, host, arq):
        if isinstance(self.fail, BaseException):
            raise self.fail
        if self.fail:
            raise RuntimeError(self.fail)
        self.programmed.append((host, arq))
        return {'programmed': True}

    def release(self, ctxt, host, arq):
        self.released.append((host, arq))


class Events:
    def __init__(self):
        self.sent = []

    def send(self, arq_uuid, server_uuid, status):
        self.sent.append((arq_uuid, server_uuid, status))
        return True, 'delivered'


def device(host, index, kind='FPGA', handles=1):
    n = '%012d' % index
    return {
        'uuid': '11111111-0000-4000-8000-' + n,
        'type': kind,
        'vendor': '0x8086',
        'model': 'fake-%s' % kind.lower(),
        'std_board_info': '{}',
        'vendor_board_info': 'fake',
        'hostname': host,
        'driver_name': 'fake',
        'deployables': [
            {
                'uuid': '22222222-0000-4000-8000-' + n,
                'name': '%s_%s_%d' % (host, kind, index),
                'num_accelerators': handles,
                'rp_uuid': '33333333-0000-4000-8000-' + n,
                'driver_name': 'fake',
                'attach_handles': [
                    {
                        'uuid': '44444444-%04d-4000-8000-%s' % (h, n),
                        'attach_type': 'PCI',
                        'attach_info': '{"bus": "5e", "device": "%02d", '
                        '"domain": "0000", "function": "0"}' % h,
                        'in_use': False,
                    }
                    for h in range(handles)
                ],
            }
        ],
    }


class API:
    """A test client with the service's pieces at hand."""

    def __init__(self, client, adb, binder, agent, events):
        self.client, self.adb, self.binder = client, adb, binder
        self.agent, self.events = agent, events

    def request(
        self, method, path, headers=None, version=None, body=None, **kwargs
    ):
        headers = dict(ADMIN if headers is None else headers)
        if version:
            headers['OpenStack-API-Version'] = 'accelerator %s' % version
        if body is not None:
            kwargs['body'] = orjson.dumps(body)
            headers.setdefault('Content-Type', 'application/json')
        return self.client.simulate_request(
            method, path, headers=headers, **kwargs
        )

    def get(self, path, **kw):
        return self.request('GET', path, **kw)

    def post(self, path, body, **kw):
        return self.request('POST', path, body=body, **kw)

    def patch(self, path, body, **kw):
        return self.request('PATCH', path, body=body, **kw)

    def delete(self, path, **kw):
        return self.request('DELETE', path, **kw)

    def profile(self, name='fpga-1', groups=None, **kw):
        groups = groups or [{'resources:FPGA': '1'}]
        response = self.post(
            '/v2/device_profiles', [{'name': name, 'groups': groups}], **kw
        )
        assert response.status_code == 201, response.text
        return response.json

    def arqs(self, name='fpga-1', headers=None):
        response = self.post(
            '/v2/accelerator_requests',
            {'device_profile_name': name},
            headers=headers or SERVICE,
        )
        assert response.status_code == 201, response.text
        return response.json['arqs']

    def bind(self, arqs, rp_index=0, instance=INSTANCE, headers=None):
        patch = {
            arq['uuid']: [
                {'path': '/hostname', 'op': 'add', 'value': HOST},
                {
                    'path': '/device_rp_uuid',
                    'op': 'add',
                    'value': '33333333-0000-4000-8000-%012d' % rp_index,
                },
                {'path': '/instance_uuid', 'op': 'add', 'value': instance},
            ]
            for arq in arqs
        }
        return self.patch(
            '/v2/accelerator_requests', patch, headers=headers or SERVICE
        )

    def bind_pass(self):
        self.binder.run_once()


def error_text(response):
    """The faultstring of a Cyborg-shaped error body."""
    return orjson.loads(response.json['error_message'])['faultstring']


@pytest.fixture
def api(tmp_path):
    conf = config.build_conf([])
    policy_opts._register(conf)
    conf.set_override(
        'connection',
        'sqlite:///%s' % (tmp_path / 'accelerator.sqlite'),
        group='accelerator_database',
    )
    conf.set_override('auth_strategy', 'noauth2', group='api')
    conf.set_override('max_request_body_size', 2048, group='wsgi')
    adb = wsgi.make_adb(conf)
    agent, events = Agent(), Events()
    binder = binder_mod.Binder(adb, agent, events)
    app = wsgi.make_app(conf, binder=binder, agent=agent, adb=adb)
    device_obj.report(
        adb, HOST, [device(HOST, 0, handles=2), device(HOST, 1, kind='GPU')]
    )
    return API(falcon.testing.TestClient(app), adb, binder, agent, events)
