"""The daemons as separate processes on RabbitMQ and MariaDB/PostgreSQL.

API, placement API, scheduler, super conductor, a cell conductor and three
computes, each its own process with its own config file. One host fails
every build; another is killed with SIGKILL while it builds and started
again. Every server must end ACTIVE or ERROR with a fault, and placement
must hold exactly the allocations of the ACTIVE servers.
"""

import re

import pytest
import requests

from nimbus.allinone.client import ComputeClient
from nimbus.testing import daemons

pytestmark = pytest.mark.integration

TINY = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
# host-2 is sized to hold exactly this many m1.tiny servers (plus the
# default 512 MB reserved for the host): placement never lets more than
# HOST2_SLOTS builds be attributed to it at once.
HOST2_SLOTS = 4
INTERRUPTED = 'Build interrupted by a compute restart'


def _cloud(tmp_path, fresh, kind, compute_options=None, options=None):
    databases = {
        name: fresh.database(kind)
        for name in ('api', 'cell0', 'cell1', 'placement')
    }
    common = {'compute': {'update_resources_interval': 2}}
    for section, values in (options or {}).items():
        common.setdefault(section, {}).update(values)
    cloud = daemons.DaemonCloud(
        str(tmp_path / 'cloud'),
        fresh.vhost(),
        fresh.vhost(),
        databases,
        hosts=3,
        compute_options=compute_options,
        common_options=common,
    )
    cloud.prepare()
    return cloud


def _wait(predicate, timeout, what, cloud):
    return daemons.wait_for(
        predicate, timeout, what, list(cloud.daemons.values())
    )


def _placement(cloud, path):
    response = requests.get(
        cloud.placement_url + path,
        headers={
            'X-Auth-Token': 'admin',
            'OpenStack-API-Version': 'placement latest',
        },
        timeout=30,
    )
    response.raise_for_status()
    return response.json()


def _consumers_in_placement(cloud):
    consumers = {}
    for rp in _placement(cloud, '/resource_providers')['resource_providers']:
        allocations = _placement(
            cloud, '/resource_providers/%s/allocations' % rp['uuid']
        )
        for consumer, alloc in allocations['allocations'].items():
            consumers.setdefault(consumer, {})[rp['uuid']] = alloc['resources']
    return consumers


def _ready(cloud):
    api = ComputeClient(cloud.api_url)
    _wait(
        lambda: (
            len(
                [
                    h
                    for h in api.get('/os-hypervisors/detail')['hypervisors']
                    if h.get('state') == 'up'
                ]
            )
            == 3
        ),
        60,
        'three computes to report',
        cloud,
    )
    cloud.manage('cell', 'discover-hosts')
    return api


def _log(cloud, name):
    with open(cloud.daemons[name].log_file, errors='replace') as f:
        return f.read()


def _check_credentials_and_flags(cloud):
    """The daemons run with only the credentials the README gives them,
    and nimbus-api listens where --host/--port said, not where its config
    file said. The test passing with these configs is the proof that
    computes need no database and a cell never reaches the API database.
    """

    def connections(name):
        config = cloud.config_of(name)
        return {
            section
            for section in config.sections()
            if config.has_option(section, 'connection')
        }

    for host in cloud.hosts:
        assert connections(host) == set(), host
    assert connections('cell1-conductor') == {'database'}
    assert connections('placement-api') == {'placement_database'}
    for name in ('api', 'scheduler', 'conductor'):
        assert connections(name) == {'api_database'}, name
    assert cloud.api_config_port != cloud.api_port
    assert (
        'nimbus-api listening on http://127.0.0.1:%d' % cloud.api_port
    ) in _log(cloud, 'api')


def test_thirty_servers_with_a_failing_host_and_a_killed_compute(
    tmp_path, fresh
):
    cloud = _cloud(
        tmp_path,
        fresh,
        'mysql',
        compute_options={
            'host-1': {
                'fake_driver': {'fail_builds': 'true', 'spawn_seconds': 0.2}
            },
            # Slow, so a kill -9 finds builds in progress; small, so at most
            # HOST2_SLOTS servers can be lost to that kill.
            'host-2': {
                'fake_driver': {
                    'spawn_seconds': 5.0,
                    'memory_mb': 512 + HOST2_SLOTS * 512,
                }
            },
            'host-3': {'fake_driver': {'spawn_seconds': 0.2}},
        },
        options={
            # Pick at random among every host that fits, so each host (the
            # failing one too) gets a share of the 30 servers.
            'filter_scheduler': {'host_subset_size': 3}
        },
    )
    try:
        cloud.start()
        api = _ready(cloud)
        _check_credentials_and_flags(cloud)
        flavor = api.create_flavor('m1.tiny', 1, 512, 1)
        image = api.create_image('cirros')
        ids = [
            api.create_server('vm-%02d' % i, flavor['id'], image['id'])[
                'server'
            ]['id']
            for i in range(30)
        ]

        def building_on_host2():
            return {
                s['id']
                for s in api.servers()
                if s['status'] == 'BUILD'
                and s.get('OS-EXT-SRV-ATTR:host') == 'host-2'
            }

        _wait(building_on_host2, 120, 'a build on host-2', cloud)
        cloud.daemons['host-2'].kill9()
        # host-2 is dead: whatever it was building stays in BUILD.
        interrupted = building_on_host2()
        assert interrupted, 'the kill hit no build\n' + cloud.logs()
        cloud.start_compute('host-2')

        def settled():
            servers = {s['id']: s for s in api.servers()}
            if set(ids) <= set(servers) and not any(
                servers[i]['status'] == 'BUILD' for i in ids
            ):
                return servers
            return None

        servers = _wait(settled, 300, 'every server to leave BUILD', cloud)
        logs = cloud.logs()

        # Every server ended ACTIVE or ERROR; none stays in BUILD.
        active = {i for i in ids if servers[i]['status'] == 'ACTIVE'}
        errored = {i for i in ids if servers[i]['status'] == 'ERROR'}
        assert active | errored == set(ids), logs
        hosts = {i: servers[i]['OS-EXT-SRV-ATTR:host'] for i in active}
        assert set(hosts.values()) <= {'host-2', 'host-3'}, hosts

        # Every ERROR has a fault with a message and details. host-3 never
        # fails and every host list holds it (max_attempts 3, three
        # hosts), so the only way to fail is an interrupted build on
        # host-2 with no alternate left, settled by host-2's recovery at
        # start.
        host2_log = _log(cloud, 'host-2')
        for server_id in errored:
            fault = servers[server_id].get('fault') or {}
            assert fault.get('message') and fault.get('details'), (
                server_id,
                fault,
            )
            assert fault['message'] == INTERRUPTED, (server_id, fault)
            assert 'host-2' in fault['details'], (server_id, fault)
            assert '%s: Build interrupted' % server_id in host2_log
        # The kill hit builds and the restart's recovery handled them: a
        # build host-2 had taken was handed to its next alternate (ACTIVE
        # elsewhere) or, with none left, failed with the fault above; a
        # guest complete when the process died is ACTIVE on host-2; a
        # build still queued for host-2 built there after the restart.
        handed_back = {
            server_id
            for server_id in interrupted
            if '%s: Build interrupted' % server_id in host2_log
        }
        for server_id in interrupted:
            assert (
                server_id in errored
                or hosts.get(server_id) == 'host-2'
                or server_id in handed_back
            ), (server_id, servers[server_id])
        for server_id in handed_back - errored:
            assert hosts.get(server_id) != 'host-2', (
                server_id,
                servers[server_id],
            )

        # At most HOST2_SLOTS builds were attributed to host-2 when it
        # died (placement holds host-2's capacity for each); everything
        # else must become ACTIVE.
        assert len(errored) <= HOST2_SLOTS, (len(errored), logs)
        assert len(active) >= 30 - HOST2_SLOTS

        # The failing host caused reschedules: every build it failed was
        # handed to the cell conductor and ended elsewhere.
        failed_on_host1 = set(
            re.findall(
                r'Build of ([0-9a-f-]{36}) failed on host-1',
                _log(cloud, 'host-1'),
            )
        )
        assert failed_on_host1, 'host-1 got no build\n' + logs
        assert failed_on_host1 <= set(ids)
        cell_log = _log(cloud, 'cell1-conductor')
        for server_id in failed_on_host1:
            assert re.search(
                r'Rescheduling %s from host-1 to host-[23]' % server_id,
                cell_log,
            ), server_id
            assert server_id in active or server_id in errored

        # Placement holds exactly the ACTIVE servers' allocations: one
        # m1.tiny per server on its host's provider, and each provider's
        # usage is the sum of its servers.
        providers = {
            rp['name']: rp['uuid']
            for rp in _placement(cloud, '/resource_providers')[
                'resource_providers'
            ]
        }
        consumers = _consumers_in_placement(cloud)
        assert set(consumers) == active, 'leaked: %s missing: %s' % (
            set(consumers) - active,
            active - set(consumers),
        )
        for server_id in active:
            assert consumers[server_id] == {
                providers[hosts[server_id]]: TINY
            }, server_id
        for name, rp_uuid in providers.items():
            count = sum(1 for h in hosts.values() if h == name)
            usages = _placement(
                cloud, '/resource_providers/%s/usages' % rp_uuid
            )['usages']
            assert {rc: usages.get(rc, 0) for rc in TINY} == {
                rc: amount * count for rc, amount in TINY.items()
            }, name
        assert sum(1 for h in hosts.values() if h == 'host-2') <= HOST2_SLOTS
    finally:
        cloud.stop()


_CONTEXT = re.compile(r'^\S+ \S+ \d+ \w+ \S+ \[([^\]]*)\]')


def _lines_about(cloud, uuid):
    """(daemon, line) for every log line of every daemon naming ``uuid``."""
    for name in cloud.daemons:
        for line in _log(cloud, name).splitlines():
            if uuid in line:
                yield name, line


def test_request_id_is_in_every_service_log_on_postgresql(tmp_path, fresh):
    """The request id of a POST /servers travels through every service.

    Two requests are traced: one that builds (ACTIVE), and one forced onto
    host-1, which fails every build, so the compute hands it to the cell
    conductor, which gives up (ERROR). Between them every daemon handles
    one of them: api, placement-api, scheduler, the super conductor, the
    cell conductor and a compute.

    "Every line" is precise: every log line, in any daemon, that names the
    server's uuid was logged while handling its POST and carries its
    request id, except lines of other requests the test itself made (its
    GET /servers/{id} polls, each with a request id of its own, which the
    test collects from the responses). Periodic tasks (heartbeats,
    resource updates, host-state reloads) never name an instance at the
    log levels used here; were one to, it would show up as a failure here
    and need its own exclusion.
    """
    cloud = _cloud(
        tmp_path,
        fresh,
        'postgresql',
        compute_options={'host-1': {'fake_driver': {'fail_builds': 'true'}}},
        options={'DEFAULT': {'debug': 'true'}},
    )
    try:
        cloud.start()
        api = _ready(cloud)
        _check_credentials_and_flags(cloud)
        flavor = api.create_flavor('m1.tiny', 1, 512, 1)
        image = api.create_image('cirros')
        own_ids = []
        api.session.hooks['response'].append(
            lambda r, *a, **k: own_ids.append(
                r.headers.get('x-openstack-request-id')
            )
        )

        def boot(name, **extra):
            response = api.session.post(
                api.url + '/servers',
                json={
                    'server': dict(
                        name=name,
                        flavorRef=flavor['id'],
                        imageRef=image['id'],
                        networks='none',
                        **extra,
                    )
                },
            )
            assert response.status_code == 202, response.text
            return (
                response.json()['server']['id'],
                response.headers['x-openstack-request-id'],
            )

        traced = {}
        ok_id, ok_rid = boot('traced-ok')
        fail_id, fail_rid = boot(
            'traced-fail', availability_zone='nova:host-1'
        )
        for server_id, rid in ((ok_id, ok_rid), (fail_id, fail_rid)):
            traced[server_id] = (
                rid,
                _wait(
                    lambda server_id=server_id: (
                        lambda s: s if s['status'] != 'BUILD' else None
                    )(api.server(server_id)),
                    90,
                    'a traced server',
                    cloud,
                ),
            )
        ok = traced[ok_id][1]
        assert ok['status'] == 'ACTIVE', cloud.logs()
        assert traced[fail_id][1]['status'] == 'ERROR', cloud.logs()
        assert traced[fail_id][1]['fault']['details'], traced[fail_id]
        other_requests = set(own_ids) - {ok_rid, fail_rid}

        handled = {
            ok_rid: {
                'api',
                'placement-api',
                'scheduler',
                'conductor',
                ok['OS-EXT-SRV-ATTR:host'],
            },
            fail_rid: {
                'api',
                'placement-api',
                'scheduler',
                'conductor',
                'host-1',
                'cell1-conductor',
            },
        }
        assert set().union(*handled.values()) >= set(cloud.daemons) - {
            'host-2',
            'host-3',
        }
        for rid, names in handled.items():
            for name in names:
                assert rid in _log(cloud, name), '%s never logged %s\n%s' % (
                    name,
                    rid,
                    cloud.daemons[name].tail(),
                )

        for server_id, (rid, _) in traced.items():
            lines = list(_lines_about(cloud, server_id))
            assert lines
            for name, line in lines:
                context = _CONTEXT.match(line)
                if (
                    context
                    and set(re.findall(r'req-[0-9a-f-]{36}', context.group(1)))
                    & other_requests
                ):
                    continue
                assert rid in line, '%s logged %s without %s:\n%s' % (
                    name,
                    server_id,
                    rid,
                    line,
                )
    finally:
        cloud.stop()
