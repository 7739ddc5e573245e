"""The Nova side of boot_bench --compare-nova: the ratios it prints and
the stub that stands in for Glance and Neutron (a Nova cloud itself is
started only by the benchmark)."""

import json
import os
import sys
import threading
import urllib.request

import pytest

sys.path.insert(
    0,
    os.path.join(
        os.path.dirname(__file__),
        os.pardir,
        os.pardir,
        os.pardir,
        'benchmarks',
    ),
)

import nova_cloud  # noqa: E402


def _side(sustained, p50, p99, cpu, multi):
    return {
        'rates': [
            {
                'offered_per_s': 5,
                'sustained_active_per_s': sustained,
                'p50_s': p50,
                'p99_s': p99,
                'cpu_ms_per_boot': cpu,
            }
        ],
        'multi_create': {'all_active_s': multi},
    }


def test_ratios_say_how_many_times_better_nimbus_is():
    nimbus = _side(5.0, 0.4, 0.8, {'api': 20.0, 'scheduler': 10.0}, 4.0)
    nova = _side(
        0.5, 20.0, 40.0, {'nova-api': 300.0, 'placement': 300.0}, 80.0
    )
    out = nova_cloud.ratios(nimbus, nova)
    assert out['rates'] == [
        {
            'offered_per_s': 5,
            'sustained': 10.0,
            'p50': 50.0,
            'p99': 50.0,
            'cpu_ms_per_boot': 20.0,
        }
    ]
    assert out['multi_create_all_active'] == 20.0


def test_a_missing_figure_gives_no_ratio():
    nimbus = _side(5.0, 0.4, 0.8, {}, None)
    nova = _side(0.0, 20.0, 40.0, {'nova-api': 1.0}, 80.0)
    out = nova_cloud.ratios(nimbus, nova)
    assert out['rates'][0]['sustained'] is None
    assert out['rates'][0]['cpu_ms_per_boot'] is None
    assert out['multi_create_all_active'] is None


@pytest.fixture
def stub():
    server = nova_cloud._ThreadingServer(
        ('127.0.0.1', 0), nova_cloud._ImageHandler
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield 'http://127.0.0.1:%d' % server.server_port
    server.shutdown()


def _get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_stub_serves_the_one_image_and_its_schema(stub):
    status, image = _get(stub + '/v2/images/' + nova_cloud.IMAGE_ID)
    assert status == 200
    assert image['id'] == nova_cloud.IMAGE_ID
    assert image['status'] == 'active'
    status, schema = _get(stub + '/v2/schemas/image')
    assert status == 200
    assert set(image) <= set(schema['properties'])
    status, listing = _get(stub + '/v2/images')
    assert [i['id'] for i in listing['images']] == [nova_cloud.IMAGE_ID]


def test_the_stub_has_no_ports_and_no_other_image(stub):
    status, body = _get(stub + '/v2.0/ports.json?device_id=x')
    assert (status, body) == (200, {'ports': []})
    status, body = _get(stub + '/v2.0/security-groups')
    assert (status, body) == (200, {'security_groups': []})
    status, body = _get(stub + '/v2/images/' + '0' * 32)
    assert status == 404
    assert 'message' in body['error']
