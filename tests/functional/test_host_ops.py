"""``nimbus host drain|evacuate`` and ``POST /os-scheduler/move-dry-run``
against a whole in-process cloud (API -> conductors -> scheduler ->
computes -> placement), the CLI driven as an operator runs it: the dry
run's answer is the host the real move then takes, it leaves placement
as it was, it names the filter that refused each host; a drain ends
with the host disabled, empty and holding nothing in placement; an
evacuation rebuilds the servers of a down host and is refused while the
host is up."""

import json

import pytest

from nimbus import services
from nimbus.common import context
from nimbus.cmd import cli
from tests.functional.test_server_actions import ADMIN
from tests.functional.test_server_actions import Api
from tests.functional.test_shelve_evacuate import _faults
from tests.functional.test_shelve_evacuate import _force_down
from tests.functional.test_shelve_evacuate import _migrations
from tests.functional.test_shelve_evacuate import _wait_for


def _api(make_cloud, hosts):
    return Api(make_cloud(hosts=hosts))


def _boot_on(api, host, name='vm', group=None, stopped=False):
    """A server forced onto ``host`` (an admin's ``availability_zone``
    ``:host``), ACTIVE, or SHUTOFF with ``stopped``."""
    body = {
        'server': {
            'name': name,
            'flavorRef': api.flavor['id'],
            'imageRef': api.image['id'],
            'networks': 'none',
        }
    }
    if host:
        body['server']['availability_zone'] = ':%s' % host
    if group:
        body['os:scheduler_hints'] = {'group': group}
    response = api.call('POST', '/servers', body, ADMIN)
    assert response.status_code == 202, response.text
    uuid = response.json()['server']['id']
    api.wait(uuid, 'ACTIVE')
    if stopped:
        assert api.action(uuid, {'os-stop': None}, ADMIN).status_code == 202
        api.wait(uuid, 'SHUTOFF')
    return uuid


def _host(api, uuid):
    return api.show(uuid)['OS-EXT-SRV-ATTR:host']


def _placement(api):
    """Every provider's usages and every allocation of every consumer
    placement holds: ``{provider name: usages}``, ``{consumer: {provider
    uuid: resources}}``."""
    client = services.placement(api.cloud.conf)
    ctxt = context.get_admin_context()
    usages, allocations = {}, {}
    providers = client.request(ctxt, 'GET', '/resource_providers').json()
    for rp in providers['resource_providers']:
        usages[rp['name']] = client.request(
            ctxt, 'GET', '/resource_providers/%s/usages' % rp['uuid']
        ).json()['usages']
        held = client.request(
            ctxt, 'GET', '/resource_providers/%s/allocations' % rp['uuid']
        ).json()['allocations']
        for consumer, value in held.items():
            allocations.setdefault(consumer, {})[rp['uuid']] = value[
                'resources'
            ]
    return usages, allocations


def _nimbus(api, capsys, *argv):
    """``nimbus ARGV --url ... --format json``: (exit code, JSON)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        cli.main(
            list(argv)
            + ['--url', api.cloud.api_url, '--format', 'json']
            + ['--placement-url', api.cloud.placement_url]
        )
    out, err = capsys.readouterr()
    code = exit_.value.code
    return (0 if code is None else code), out, err


def _run(api, capsys, *argv):
    code, out, err = _nimbus(api, capsys, *argv)
    return code, json.loads(out), err


def _service(api, host):
    (svc,) = [
        s
        for s in api.call('GET', '/os-services', who=ADMIN).json()['services']
        if s['host'] == host and s['binary'] == 'nova-compute'
    ]
    return svc


def _move_dry_run(api, uuid, **body):
    response = api.call(
        'POST', '/os-scheduler/move-dry-run', dict(body, server_id=uuid), ADMIN
    )
    assert response.status_code == 200, response.text
    return response.json()['move_dry_run']


def test_dry_run_names_the_host_the_migrate_takes_and_claims_nothing(
    make_cloud, capsys
):
    api = _api(make_cloud, 3)
    first, second, third = api.cloud.host_names()
    uuid = _boot_on(api, first, 'a', stopped=True)
    _boot_on(api, second, 'b')
    before = _placement(api)
    answer = _move_dry_run(api, uuid)
    # The spec a migrate builds: the source ignored, so the empty host
    # is the best and the host holding a server the alternate.
    assert (answer['source'], answer['move']) == (first, 'migrate')
    assert (answer['host'], answer['alternates']) == (third, [second])
    assert [r['host'] for r in answer['ranked']] == [third, second]
    assert {r['host']: r['filter'] for r in answer['rejected']} == {
        first: 'IgnoreHosts'
    }
    # A chosen host is requested, not forced: only it is judged.
    chosen = _move_dry_run(api, uuid, host=second)
    assert (chosen['host'], chosen['alternates']) == (second, [])
    # The same through the CLI (a drain's dry run), which changes nothing.
    code, shown, _ = _run(api, capsys, 'host', 'drain', first, '--dry-run')
    assert code == 0
    (server,) = shown['servers']
    assert (server['uuid'], server['move']) == (uuid, 'migrate')
    assert server['scheduler']['host'] == third
    assert _placement(api) == before
    assert _service(api, first)['status'] == 'enabled'
    assert _migrations(api, uuid) == []
    # Nothing changed in between: the real move takes the answered host.
    assert api.action(uuid, {'migrate': None}, ADMIN).status_code == 202
    server, _ = api.wait(uuid, 'VERIFY_RESIZE')
    assert server['OS-EXT-SRV-ATTR:host'] == third
    # The server's own host is not a destination (400).
    response = api.call(
        'POST',
        '/os-scheduler/move-dry-run',
        {'server_id': uuid, 'host': third},
        ADMIN,
    )
    assert response.status_code == 400, response.text
    assert 'host the server is on' in response.text


def test_dry_run_names_the_filter_that_refused_each_host(make_cloud, capsys):
    api = _api(make_cloud, 2)
    first, second = api.cloud.host_names()
    response = api.call(
        'POST',
        '/os-server-groups',
        {'server_group': {'name': 'g', 'policy': 'anti-affinity'}},
        ADMIN,
    )
    assert response.status_code == 200, response.text
    group = response.json()['server_group']['id']
    uuid = _boot_on(api, None, 'a', group=group)
    other = _boot_on(api, None, 'b', group=group)
    source = _host(api, uuid)
    assert {source, _host(api, other)} == {first, second}
    before = _placement(api)
    code, shown, _ = _run(api, capsys, 'host', 'drain', source, '--dry-run')
    # Nowhere to go: the anti-affinity member on the other host says no.
    assert code == 1, json.dumps(shown, indent=1)
    (server,) = shown['servers']
    answer = server['scheduler']
    assert answer['host'] is None and answer['message']
    refusals = {r['host']: r['filter'] for r in answer['rejected']}
    assert refusals == {
        source: 'IgnoreHosts',
        _host(api, other): 'ServerGroupAntiAffinityFilter',
    }
    # The table says the same to a person.
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        cli.main(
            ['host', 'evacuate', source, '--dry-run']
            + ['--url', api.cloud.api_url]
        )
    assert exit_.value.code == 1
    text = capsys.readouterr().out
    assert 'ServerGroupAntiAffinityFilter' in text
    assert 'evacuate is refused now' in text
    assert 'nothing was changed or claimed' in text
    assert _placement(api) == before
    # The real move agrees: no valid host, the server stays where it is.
    assert api.action(uuid, {'os-stop': None}, ADMIN).status_code == 202
    api.wait(uuid, 'SHUTOFF')
    assert api.action(uuid, {'migrate': None}, ADMIN).status_code == 202
    (migration,) = _wait_for(
        lambda: [m for m in _migrations(api, uuid) if m['status'] == 'error'],
        'the migrate refused',
    )
    server, _ = api.wait(uuid, 'SHUTOFF')
    assert server['OS-EXT-SRV-ATTR:host'] == source
    assert 'No valid host' in _faults(api, uuid)[-1]
    # A drain says so, and fails: the server is still on the host.
    code, shown, _ = _run(api, capsys, 'host', 'drain', source, '--yes')
    assert code == 1
    (item,) = shown['servers']
    assert (item['result'], item['dest']) == ('failed', None)
    assert 'No valid host' in item['reason'], item
    assert shown['left_on_host'] == ['a']


def test_drain_moves_the_stopped_servers_and_leaves_the_host_empty(
    make_cloud, capsys
):
    api = _api(make_cloud, 3)
    first, second, third = api.cloud.host_names()
    stopped = [_boot_on(api, first, n, stopped=True) for n in ('a', 'b')]
    paused = _boot_on(api, first, 'c')
    assert api.action(paused, {'suspend': None}, ADMIN).status_code == 202
    api.wait(paused, 'SUSPENDED')
    code, shown, err = _run(
        api, capsys, 'host', 'drain', first, '--yes', '--parallel', '2'
    )
    # The suspended server is skipped, with the reason, and stays.
    assert code == 1, err
    results = {s['uuid']: s for s in shown['servers']}
    assert results[paused]['result'] == 'skipped'
    assert 'SUSPENDED' in results[paused]['reason']
    assert shown['left_on_host'] == ['c']
    for uuid in stopped:
        assert results[uuid]['result'] == 'moved', results[uuid]
        server, _ = api.wait(uuid, 'SHUTOFF')
        assert server['OS-EXT-SRV-ATTR:host'] == results[uuid]['dest']
        assert results[uuid]['dest'] in (second, third)
        (migration,) = _migrations(api, uuid)
        assert migration['status'] == 'confirmed'
    svc = _service(api, first)
    assert (svc['status'], svc['disabled_reason']) == ('disabled', 'drain')
    # Once the last one is gone (deleted here), the host holds nothing.
    assert (
        api.call('DELETE', '/servers/%s' % paused, who=ADMIN).status_code
        == 204
    )
    _wait_for(
        lambda: (
            api.call('GET', '/servers/%s' % paused, who=ADMIN).status_code
            == 404
        ),
        'c deleted',
    )
    code, shown, err = _run(api, capsys, 'host', 'drain', first, '--yes')
    assert code == 0, err
    assert shown['servers'] == [] and shown['left_on_host'] == []
    usages, allocations = _placement(api)
    assert not any(usages[first].values()), usages[first]
    for uuid in stopped:
        assert set(allocations[uuid]) != set()
    assert set(allocations) == set(stopped)


def test_drain_live_migrates_the_active_servers(make_cloud, capsys):
    api = _api(make_cloud, 3)
    first = api.cloud.host_names()[0]
    active = [_boot_on(api, first, n) for n in ('a', 'b')]
    code, shown, err = _run(api, capsys, 'host', 'drain', first, '--yes')
    assert code == 0, (err, shown)
    for item in shown['servers']:
        assert (item['move'], item['result']) == ('live-migrate', 'moved')
    for uuid in active:
        server, _ = api.wait(uuid, 'ACTIVE')
        assert server['OS-EXT-SRV-ATTR:host'] != first
    usages, _ = _placement(api)
    assert not any(usages[first].values())


def test_evacuate_rebuilds_every_server_of_a_down_host(make_cloud, capsys):
    api = _api(make_cloud, 3)
    first, second, third = api.cloud.host_names()
    active = _boot_on(api, first, 'a')
    stopped = _boot_on(api, first, 'b', stopped=True)
    api.cloud.stop_compute(first)
    _force_down(api, first)
    code, planned, _ = _run(
        api, capsys, 'host', 'evacuate', first, '--dry-run'
    )
    assert code == 0
    assert {s['scheduler']['host'] for s in planned['servers']} <= {
        second,
        third,
    }
    assert all(s['move'] == 'evacuate' for s in planned['servers'])
    code, shown, err = _run(api, capsys, 'host', 'evacuate', first, '--yes')
    assert code == 0, err
    assert shown['left_on_host'] == []
    for uuid, status in ((active, 'ACTIVE'), (stopped, 'SHUTOFF')):
        server, _ = api.wait(uuid, status)
        (item,) = [s for s in shown['servers'] if s['uuid'] == uuid]
        assert item['result'] == 'moved'
        assert server['OS-EXT-SRV-ATTR:host'] == item['dest']
        assert item['dest'] in (second, third)
        (migration,) = _migrations(api, uuid)
        assert migration['migration_type'] == 'evacuation'


def test_evacuate_to_a_target_host(make_cloud, capsys):
    api = _api(make_cloud, 3)
    first, _second, third = api.cloud.host_names()
    uuid = _boot_on(api, first, 'a')
    api.cloud.stop_compute(first)
    _force_down(api, first)
    code, planned, _ = _run(
        api,
        capsys,
        'host',
        'evacuate',
        first,
        '--dry-run',
        '--target-host',
        third,
    )
    assert code == 0
    (server,) = planned['servers']
    assert (
        server['scheduler']['host'],
        server['scheduler']['alternates'],
    ) == (third, [])
    code, shown, err = _run(
        api, capsys, 'host', 'evacuate', first, '--yes', '--target-host', third
    )
    assert code == 0, err
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == third


def test_evacuate_is_refused_while_the_host_is_up(make_cloud, capsys):
    api = _api(make_cloud, 2)
    first = api.cloud.host_names()[0]
    uuid = _boot_on(api, first, 'a')
    before = _placement(api)
    code, out, err = _nimbus(api, capsys, 'host', 'evacuate', first, '--yes')
    assert code != 0
    assert 'compute service of %s is up' % first in str(code)
    assert out == ''
    assert _host(api, uuid) == first
    assert _migrations(api, uuid) == []
    assert _placement(api) == before
