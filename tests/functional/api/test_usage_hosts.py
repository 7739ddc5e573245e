"""os-simple-tenant-usage, os-hosts (below 2.43), os-hypervisors search
and servers (below 2.53) and os-instance_usage_audit_log, validated
against Tempest's response schemas."""

import datetime

import jsonschema
import pytest
import sqlalchemy as sa

from nimbus.db.cell import models as cell_models

pytest.importorskip('tempest.lib.api_schema.response.compute.v2_1.hosts')
from tempest.lib.api_schema.response.compute.v2_1 import (  # noqa: E402
    hosts as hosts_schema,
    hypervisors as hypervisors_schema,
    instance_usage_audit_logs as audit_schema,
    tenant_usages as usage_schema,
)

IMAGE = '70a599e0-31e7-49b7-b260-868f441e862b'
T0 = datetime.datetime(2026, 1, 10, 0, 0, 0)


def check(schema, response):
    assert response.status_code in schema['status_code'], response.text
    jsonschema.validate(response.json, schema['response_body'])


def _set_times(api, uuid, launched, terminated=None):
    with api.cells.db(api.cell1).session() as session:
        session.execute(
            sa.update(cell_models.Instance)
            .where(cell_models.Instance.uuid == uuid)
            .values(
                launched_at=launched,
                terminated_at=terminated,
                deleted=terminated is not None,
            )
        )


@pytest.fixture
def cloud(api):
    api.add_flavor('1', 'm1.small', vcpus=2, memory_mb=512, root_gb=10)
    api.add_image(IMAGE)
    api.add_compute('host1')
    api.add_compute('host2')
    api.add_service('host1', 'nimbus-scheduler')
    servers = {}
    for user, name in (('demo', 'a'), ('demo', 'b'), ('other', 'c')):
        r = api.req(
            'POST',
            '/v2.1/servers',
            {'server': {'name': name, 'flavorRef': '1', 'imageRef': IMAGE}},
            user=user,
        )
        servers[name] = r.json['server']['id']
        api.place(servers[name], host='host1')
    # a: the whole of Jan 10 and on; b: 6 hours on Jan 10, then deleted;
    # c (project other): from noon on Jan 10.
    _set_times(api, servers['a'], T0)
    _set_times(api, servers['b'], T0, T0 + datetime.timedelta(hours=6))
    _set_times(api, servers['c'], T0 + datetime.timedelta(hours=12))
    api.servers = servers
    return api


PERIOD = 'start=2026-01-10T00:00:00&end=2026-01-11T00:00:00'


def test_usage_show(cloud):
    r = cloud.req('GET', '/v2.1/os-simple-tenant-usage/demo?' + PERIOD)
    check(usage_schema.get_tenant_usage, r)
    usage = r.json['tenant_usage']
    assert usage['tenant_id'] == 'demo'
    assert usage['total_hours'] == pytest.approx(30.0)
    assert usage['total_vcpus_usage'] == pytest.approx(60.0)
    assert usage['total_memory_mb_usage'] == pytest.approx(30.0 * 512)
    assert usage['total_local_gb_usage'] == pytest.approx(300.0)
    by_id = {s['instance_id']: s for s in usage['server_usages']}
    assert by_id[cloud.servers['b']]['state'] == 'terminated'
    assert by_id[cloud.servers['b']]['hours'] == pytest.approx(6.0)
    assert by_id[cloud.servers['b']]['uptime'] == 6 * 3600
    assert by_id[cloud.servers['a']]['ended_at'] is None
    assert by_id[cloud.servers['a']]['flavor'] == 'm1.small'
    # A period after b ended leaves it out.
    r = cloud.req(
        'GET',
        '/v2.1/os-simple-tenant-usage/demo?start='
        '2026-01-12T00:00:00&end=2026-01-13T00:00:00',
    )
    assert [
        s['instance_id'] for s in r.json['tenant_usage']['server_usages']
    ] == [cloud.servers['a']]
    # A period before anything launched: an empty object, as Nova.
    r = cloud.req(
        'GET',
        '/v2.1/os-simple-tenant-usage/demo?start='
        '2025-01-12T00:00:00&end=2025-01-13T00:00:00',
    )
    assert r.status_code == 200 and r.json['tenant_usage'] == {}


def test_usage_show_with_empty_project_id_is_404(cloud):
    # Tempest's test_get_usage_tenant_with_empty_tenant_id: the path ends
    # in a slash and names no project.
    r = cloud.admin('GET', '/v2.1/os-simple-tenant-usage/?' + PERIOD)
    assert r.status_code == 404, r.text
    assert 'os-simple-tenant-usage' in r.json['itemNotFound']['message']
    # a project with servers in the period shows them all, in the shape
    # Tempest's show schema requires (server_usages included)
    r = cloud.admin('GET', '/v2.1/os-simple-tenant-usage/other?' + PERIOD)
    check(usage_schema.get_tenant_usage, r)
    usage = r.json['tenant_usage']
    assert [s['instance_id'] for s in usage['server_usages']] == [
        cloud.servers['c']
    ]
    assert len(usage) == 8


def test_usage_list_admin_only(cloud):
    assert (
        cloud.req('GET', '/v2.1/os-simple-tenant-usage?' + PERIOD).status_code
        == 403
    )
    assert (
        cloud.req(
            'GET', '/v2.1/os-simple-tenant-usage/other?' + PERIOD
        ).status_code
        == 403
    )
    r = cloud.admin('GET', '/v2.1/os-simple-tenant-usage?' + PERIOD)
    check(usage_schema.list_tenant_usage, r)
    totals = {u['tenant_id']: u for u in r.json['tenant_usages']}
    assert set(totals) == {'demo', 'other'}
    assert totals['other']['total_hours'] == pytest.approx(12.0)
    assert 'server_usages' not in totals['demo']
    r = cloud.admin('GET', '/v2.1/os-simple-tenant-usage?detailed=1&' + PERIOD)
    check(usage_schema.list_tenant_usage, r)
    assert all('server_usages' in u for u in r.json['tenant_usages'])


def test_usage_paging_from_240(cloud):
    r = cloud.admin(
        'GET',
        '/v2.1/os-simple-tenant-usage?detailed=1&limit=1&' + PERIOD,
        version='2.40',
    )
    usages = r.json['tenant_usages']
    assert sum(len(u['server_usages']) for u in usages) == 1
    assert 'marker=' in r.json['tenant_usages_links'][0]['href']


@pytest.mark.parametrize(
    'query, words',
    [
        ('start=yesterday', 'yesterday'),
        ('start=2026-01-11T00:00:00&end=2026-01-10T00:00:00', 'start time'),
        ('detailed=perhaps&' + PERIOD, 'detailed'),
    ],
)
def test_usage_bad_query(cloud, query, words):
    r = cloud.admin('GET', '/v2.1/os-simple-tenant-usage?' + query)
    assert r.status_code == 400
    assert words in r.json['badRequest']['message']


def test_hosts_below_243(cloud):
    r = cloud.admin('GET', '/v2.1/os-hosts', version='2.42')
    check(hosts_schema.list_hosts, r)
    hosts = {(h['host_name'], h['service']) for h in r.json['hosts']}
    assert ('host1', 'compute') in hosts and ('host2', 'compute') in hosts
    zones = {
        h['host_name']: h['zone']
        for h in r.json['hosts']
        if h['service'] == 'compute'
    }
    assert zones['host1'] == 'nova'
    r = cloud.admin('GET', '/v2.1/os-hosts?zone=internal', version='2.42')
    assert {h['service'] for h in r.json['hosts']} == {'scheduler'}
    r = cloud.admin('GET', '/v2.1/os-hosts/host1', version='2.1')
    check(hosts_schema.get_host_detail, r)
    rows = {x['resource']['project']: x['resource'] for x in r.json['host']}
    assert rows['(total)']['cpu'] == 8
    assert rows['demo']['cpu'] == 2 and rows['other']['cpu'] == 2
    assert rows['(used_max)']['memory_mb'] == 1024
    assert cloud.admin('GET', '/v2.1/os-hosts/nowhere').status_code == 404
    assert (
        cloud.admin('GET', '/v2.1/os-hosts', version='2.43').status_code == 404
    )
    assert (
        cloud.admin('GET', '/v2.1/os-hosts/host1', version='2.43').status_code
        == 404
    )
    assert cloud.req('GET', '/v2.1/os-hosts').status_code == 403


def test_hypervisor_search_and_servers_below_253(cloud):
    r = cloud.admin('GET', '/v2.1/os-hypervisors/host/search', version='2.52')
    check(hypervisors_schema.list_search_hypervisors, r)
    assert sorted(h['hypervisor_hostname'] for h in r.json['hypervisors']) == [
        'host1',
        'host2',
    ]
    r = cloud.admin('GET', '/v2.1/os-hypervisors/host/servers')
    check(hypervisors_schema.get_hypervisors_servers, r)
    by_name = {h['hypervisor_hostname']: h for h in r.json['hypervisors']}
    assert {s['uuid'] for s in by_name['host1']['servers']} == {
        cloud.servers['a'],
        cloud.servers['c'],
    }
    assert 'servers' not in by_name['host2']
    assert (
        cloud.admin('GET', '/v2.1/os-hypervisors/zzz/search').status_code
        == 404
    )
    assert (
        cloud.admin(
            'GET', '/v2.1/os-hypervisors/host/search', version='2.53'
        ).status_code
        == 404
    )
    assert (
        cloud.admin(
            'GET', '/v2.1/os-hypervisors/host/servers', version='2.53'
        ).status_code
        == 404
    )
    assert (
        cloud.req('GET', '/v2.1/os-hypervisors/host/search').status_code == 403
    )


def test_instance_usage_audit_log(cloud):
    r = cloud.admin('GET', '/v2.1/os-instance_usage_audit_log')
    check(audit_schema.list_instance_usage_audit_log, r)
    log = r.json['instance_usage_audit_logs']
    assert log['num_hosts'] == 2 and log['hosts_not_run'] == ['host1', 'host2']
    r = cloud.admin(
        'GET', '/v2.1/os-instance_usage_audit_log/2026-02-15%2010:00:00'
    )
    check(audit_schema.get_instance_usage_audit_log, r)
    log = r.json['instance_usage_audit_log']
    assert log['period_beginning'] == '2026-01-01 00:00:00'
    assert log['period_ending'] == '2026-02-01 00:00:00'
    r = cloud.admin('GET', '/v2.1/os-instance_usage_audit_log/notadate')
    assert r.status_code == 400
    assert 'notadate' in r.json['badRequest']['message']
    assert (
        cloud.req('GET', '/v2.1/os-instance_usage_audit_log').status_code
        == 403
    )
