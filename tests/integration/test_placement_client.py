"""nimbus-placement-api as a subprocess, driven by openstacksdk (noauth2).

openstacksdk's placement proxy is a real Placement client: it creates
providers, inventories and traits with its own resource classes; for
allocations and candidates (no proxy methods) its keystoneauth adapter sends
the raw requests with a microversion, as Nova's report client does.
"""

import os
import socket
import subprocess
import sys
import time
import uuid

import pytest
import requests

from nimbus.testing import infra

openstack = infra.require_module('openstack')

ROOT = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)


@pytest.fixture
def placement_url(tmp_path):
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    conf = tmp_path / 'nimbus.conf'
    conf.write_text(
        '[api]\nauth_strategy = noauth2\n'
        '[placement_database]\nconnection = sqlite:///%s\n'
        % (tmp_path / 'placement.sqlite')
    )
    log = open(tmp_path / 'placement.log', 'w')
    proc = subprocess.Popen(
        [
            sys.executable,
            '-m',
            'nimbus.cmd.placement_api',
            '--config-file',
            str(conf),
            '--host',
            '127.0.0.1',
            '--port',
            str(port),
        ],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = 'http://127.0.0.1:%d' % port
    deadline = time.time() + 60
    while True:
        try:
            if requests.get(url + '/', timeout=1).status_code == 200:
                break
        except requests.RequestException:
            assert proc.poll() is None, (
                tmp_path / 'placement.log'
            ).read_text()
            assert time.time() < deadline, 'placement did not start'
            time.sleep(0.2)
    yield url
    proc.terminate()
    proc.wait(10)
    log.close()


def _connection(url):
    return openstack.connection.Connection(
        auth_type='admin_token',
        auth={'endpoint': url, 'token': 'admin'},
        placement_endpoint_override=url,
        placement_api_version='1.39',
    )


def test_openstacksdk_drives_placement(placement_url):
    conn = _connection(placement_url)
    pl = conn.placement
    rp = pl.create_resource_provider(name='sdk-node-1')
    assert rp.id
    child = pl.create_resource_provider(
        name='sdk-node-1-gpu', parent_provider_id=rp.id
    )
    assert child.root_provider_id == rp.id
    names = [p.name for p in pl.resource_providers()]
    assert {'sdk-node-1', 'sdk-node-1-gpu'} <= set(names)
    pl.create_resource_provider_inventory(
        rp, resource_class='VCPU', total=16, allocation_ratio=2.0
    )
    pl.create_resource_provider_inventory(
        rp, resource_class='MEMORY_MB', total=8192
    )
    invs = {
        i.resource_class: i.total for i in pl.resource_provider_inventories(rp)
    }
    assert invs == {'VCPU': 16, 'MEMORY_MB': 8192}
    pl.create_trait('CUSTOM_SDK_TRAIT')
    assert 'CUSTOM_SDK_TRAIT' in [t.name for t in pl.traits()]
    rp = pl.get_resource_provider(rp.id)
    resp = pl.put(
        '/resource_providers/%s/traits' % rp.id,
        json={
            'traits': ['CUSTOM_SDK_TRAIT'],
            'resource_provider_generation': rp.generation,
        },
        microversion='1.39',
    )
    assert resp.status_code == 200

    consumer = str(uuid.uuid4())
    resp = pl.put(
        '/allocations/%s' % consumer,
        json={
            'allocations': {
                rp.id: {'resources': {'VCPU': 4, 'MEMORY_MB': 1024}}
            },
            'project_id': conn.current_project_id or 'p',
            'user_id': 'u',
            'consumer_generation': None,
            'consumer_type': 'INSTANCE',
        },
        microversion='1.39',
    )
    assert resp.status_code == 204, resp.text
    body = pl.get('/allocations/%s' % consumer, microversion='1.39').json()
    assert body['allocations'][rp.id]['resources']['VCPU'] == 4

    cands = pl.get(
        '/allocation_candidates?resources=VCPU:2&required=CUSTOM_SDK_TRAIT',
        microversion='1.39',
    ).json()
    assert len(cands['allocation_requests']) == 1
    summary = cands['provider_summaries'][rp.id]['resources']['VCPU']
    assert summary == {'capacity': 32, 'used': 4}

    pl.delete(('/allocations/%s' % consumer), microversion='1.39')
    pl.delete_resource_provider(child)
    assert [p.name for p in pl.resource_providers()] == ['sdk-node-1']
