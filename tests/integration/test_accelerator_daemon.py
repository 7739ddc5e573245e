"""nimbus-accelerator-api as a daemon on RabbitMQ: nimbus-manage creates
its database, agents report devices over RPC, ARQs are created and bound
over HTTP, the bound event reaches a (stand-in) nimbus-api, and an event
nimbus-api refused is delivered after the daemon is killed -9 and
restarted."""

import subprocess
import sys
import threading
import time

import falcon
import pytest
import requests

from nimbus.accelerator import rpcapi
from nimbus.common import config
from nimbus.common import context
from nimbus.common import rpc
from nimbus.common import wsgi
from nimbus.testing import daemons

HOST = 'compute1'
INSTANCE = '6a9d8e39-3d1f-4d5c-9a55-1f4b3c2d1e0f'
RP = '33333333-0000-4000-8000-000000000000'
SERVICE = {'X-Auth-Token': 'nimbus:service', 'X-Roles': 'admin,service'}


class NimbusAPI:
    """Stands in for nimbus-api's POST /os-server-external-events: answers
    422 (instance not on a host yet) to the first ``refuse`` requests, then
    200; records every event with the status it answered."""

    def __init__(self, refuse):
        self.refuse = refuse
        self.received = []
        self.lock = threading.Lock()

    def on_post(self, req, resp):
        body = req.get_media()
        with self.lock:
            code = 422 if len(self.received) < self.refuse else 200
            self.received.append(
                (
                    code,
                    body['events'][0],
                    req.get_header('OpenStack-API-Version'),
                )
            )
        resp.status = falcon.code_to_http_status(code)
        resp.media = {'events': [dict(body['events'][0], code=code)]}


class FakeAgent:
    """An agent's RPC endpoint (topic accelerator-agent, server=HOST)."""

    def __init__(self):
        self.programmed = []

    @rpc.expose()
    def program(self, ctxt, arq=None, **kwargs):
        self.programmed.append(arq)
        return {'programmed': True}

    @rpc.expose(cast=True)
    def release(self, ctxt, arq=None, **kwargs):
        pass


def _device():
    return {
        'uuid': '11111111-0000-4000-8000-000000000000',
        'type': 'FPGA',
        'vendor': '0x8086',
        'model': 'fake',
        'std_board_info': '{}',
        'vendor_board_info': '',
        'hostname': HOST,
        'driver_name': 'fake',
        'deployables': [
            {
                'uuid': '22222222-0000-4000-8000-000000000000',
                'name': 'fpga0',
                'num_accelerators': 1,
                'rp_uuid': RP,
                'driver_name': 'fake',
                'attach_handles': [
                    {
                        'uuid': '44444444-0000-4000-8000-000000000000',
                        'attach_type': 'PCI',
                        'attach_info': '{"bus": "5e"}',
                        'in_use': False,
                    }
                ],
            }
        ],
    }


def _wait(predicate, what, daemon, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if not daemon.alive():
            pytest.fail('%s: the daemon died\n%s' % (what, daemon.tail()))
        time.sleep(0.2)
    pytest.fail('%s: timed out\n%s' % (what, daemon.tail()))


def _get(url):
    try:
        return requests.get(url, headers=SERVICE, timeout=5)
    except requests.ConnectionError:
        return None


def test_accelerator_daemon_end_to_end(tmp_path, fresh):
    bus = fresh.vhost()
    nimbus_api = NimbusAPI(refuse=1)
    app = falcon.App()
    app.add_route('/v2.1/os-server-external-events', nimbus_api)
    api_server = wsgi.serve(app, '127.0.0.1', 0, threads=2, name='fake-api')
    port = daemons.free_port()
    conf_file = tmp_path / 'accelerator.conf'
    conf_file.write_text(
        '[DEFAULT]\ntransport_url = %s\nhost = accel-test\n'
        '[api]\nauth_strategy = noauth2\n'
        '[accelerator_database]\nconnection = sqlite:///%s\n'
        'sync_on_startup = false\n'
        '[compute_client]\nendpoint = %s/v2.1\n'
        '[accelerator_api]\nbind_poll_interval = 0.2\n'
        'event_retry_initial = 0.5\nevent_retry_max = 1\n'
        % (bus, tmp_path / 'accelerator.sqlite', api_server.url)
    )
    synced = subprocess.run(
        [
            sys.executable,
            '-m',
            'nimbus.cmd.manage',
            '--config-file',
            str(conf_file),
            'db',
            'sync',
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert 'synced: accelerator' in synced.stdout, synced.stderr

    conf = config.build_conf([], overrides={'DEFAULT': {'transport_url': bus}})
    transport = rpc.get_transport(conf)
    agent = FakeAgent()
    agent_server = rpc.get_server(
        transport, 'accelerator-agent', [agent], HOST
    )
    agent_server.start()
    daemon = daemons.Daemon(
        'nimbus-accelerator-api',
        'nimbus.cmd.accelerator_api',
        str(conf_file),
        str(tmp_path / 'accelerator.log'),
        ['--host', '127.0.0.1', '--port', str(port)],
    ).start()
    base = 'http://127.0.0.1:%d' % port
    try:
        _wait(lambda: _get(base + '/'), 'API up', daemon)
        reported = rpcapi.AcceleratorAPI(transport, conf).report_devices(
            context.RequestContext(), HOST, [_device()]
        )
        assert reported == {'devices': 1}
        devices = requests.get(
            base + '/accelerator/v2/devices', headers=SERVICE, timeout=10
        ).json()
        assert [d['hostname'] for d in devices['devices']] == [HOST]

        response = requests.post(
            base + '/v2/device_profiles',
            headers=SERVICE,
            timeout=10,
            json=[{'name': 'fpga', 'groups': [{'resources:FPGA': '1'}]}],
        )
        assert response.status_code == 201, response.text
        response = requests.post(
            base + '/v2/accelerator_requests',
            headers=SERVICE,
            timeout=10,
            json={'device_profile_name': 'fpga'},
        )
        [arq] = response.json()['arqs']
        response = requests.patch(
            base + '/v2/accelerator_requests',
            headers=SERVICE,
            timeout=10,
            json={
                arq['uuid']: [
                    {'path': '/hostname', 'op': 'add', 'value': HOST},
                    {'path': '/device_rp_uuid', 'op': 'add', 'value': RP},
                    {'path': '/instance_uuid', 'op': 'add', 'value': INSTANCE},
                ]
            },
        )
        assert response.status_code == 202

        def resolved():
            r = requests.get(
                base + '/v2/accelerator_requests',
                timeout=10,
                headers=SERVICE,
                params={'instance': INSTANCE, 'bind_state': 'resolved'},
            )
            return r.json()['arqs'] if r.status_code == 200 else None

        [settled] = _wait(resolved, 'ARQ resolved', daemon)
        # The first event was refused (422); kill the daemon before its
        # retry can be counted on, then restart it on the same database.
        _wait(lambda: nimbus_api.received, 'first event', daemon)
        daemon.kill9()
        daemon.start()
        _wait(
            lambda: any(code == 200 for code, _e, _v in nimbus_api.received),
            'event delivered',
            daemon,
        )
        status = 'completed' if settled['state'] == 'Bound' else 'failed'
        for _code, event, version in nimbus_api.received:
            assert event == {
                'name': 'accelerator-request-bound',
                'server_uuid': INSTANCE,
                'tag': arq['uuid'],
                'status': status,
            }
            assert version == 'compute 2.82'
        assert nimbus_api.received[0][0] == 422
        if settled['state'] == 'Bound':
            assert [a['uuid'] for a in agent.programmed] == [arq['uuid']]
        else:
            # Before the agent's RPC API is merged, binds fail, saying so.
            assert 'agent' in daemon.tail(400)
    finally:
        daemon.stop()
        agent_server.stop()
        agent_server.wait()
        api_server.stop()
        rpc.cleanup_transports(conf)
