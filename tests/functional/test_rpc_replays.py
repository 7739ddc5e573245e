"""RPC messages delivered twice, late or out of order: each endpoint that
changes state handles them idempotently, and the service keeps serving.

tests/functional/test_rpc_messages.py sends malformed messages; here every
message is a real one. A tape records the casts and calls the services of
a running all-in-one cloud (SQLite, in-process buses) make to each other,
and a test replays one of them, later or after the message that should
have come after it, or has the tape send chosen casts twice as they go
(a broker redelivering, a sender retrying). Then the state must be what
one delivery in the right order would have left: no second instance, no
second allocation, no ERROR, no deleted instance or group back in the
scheduler's cache, no duplicated build attempt. Builds here take half a
second (``[fake_driver] spawn_seconds``), so a copy arrives while the
first one is still building. One compute (host-3) fails every build, so
that some builds are rescheduled.
"""

import json
import os
import uuid

from oslo_messaging.rpc import client as rpc_client
import pytest
import requests

from nimbus.allinone import client as client_mod
from nimbus.allinone import cloud as cloud_mod
from nimbus.common import context as nimbus_context
from nimbus.common import db as common_db
from nimbus.messaging_internals import inproc
from nimbus.db import cell_instances
from harness import twice

PLACEMENT = {
    'X-Auth-Token': 'admin',
    'OpenStack-API-Version': 'placement 1.39',
}
FLAVOR = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}


class Tape:
    """Every cast and call of the process, as ``(client, ctxt, method,
    kwargs)``; the methods in ``double`` are cast twice."""

    def __init__(self, cast, call):
        self._cast, self._call = cast, call
        self.casts, self.calls = [], []
        self.double = set()

    def record_cast(self, client, ctxt, method, **kwargs):
        self.casts.append((client, ctxt, method, kwargs))
        self._cast(client, ctxt, method, **kwargs)
        if method in self.double:
            self._cast(client, ctxt, method, **kwargs)

    def record_call(self, client, ctxt, method, **kwargs):
        self.calls.append((client, ctxt, method, kwargs))
        return self._call(client, ctxt, method, **kwargs)

    def find(self, kind, method, **match):
        """The recorded messages of ``method`` whose arguments hold
        ``match`` (a value of None: any)."""
        found = []
        for entry in list(self.casts if kind == 'cast' else self.calls):
            kwargs = entry[3]
            if entry[2] == method and all(
                kwargs.get(k) == v for k, v in match.items() if v is not None
            ):
                found.append(entry)
        return found

    def replay(self, entry, kind='cast'):
        client, ctxt, method, kwargs = entry
        send = self._cast if kind == 'cast' else self._call
        return send(client, ctxt, method, **kwargs)


@pytest.fixture(scope='module')
def cloud(tmp_path_factory):
    tag = uuid.uuid4().hex[:8]
    cloud = cloud_mod.Cloud(
        str(tmp_path_factory.mktemp('rpc-replays')),
        hosts=3,
        transport_url='inproc:///replay-%s-api' % tag,
        cell_transport_url='inproc:///replay-%s-cell1' % tag,
        fail_hosts={'host-3'},
        overrides={
            'DEFAULT': {'report_interval': 1},
            'fake_driver': {'spawn_seconds': 0.5},
        },
    )
    cloud.start()
    cloud.api = client_mod.ComputeClient(cloud.api_url)
    cloud.flavor = cloud.api.create_flavor('m1.tiny', 1, 512, 1)
    cloud.image = cloud.api.create_image('cirros')
    yield cloud
    cloud.stop()
    inproc.reset_buses()


@pytest.fixture
def tape(monkeypatch):
    base = rpc_client._BaseCallContext
    recorder = Tape(base.cast, base.call)

    def cast(client, ctxt, method, **kwargs):
        return recorder.record_cast(client, ctxt, method, **kwargs)

    def call(client, ctxt, method, **kwargs):
        return recorder.record_call(client, ctxt, method, **kwargs)

    monkeypatch.setattr(base, 'cast', cast)
    monkeypatch.setattr(base, 'call', call)
    return recorder


def _wait(predicate, what, timeout=60):
    return cloud_mod.wait_for(predicate, timeout=timeout, what=what)


def _boot(cloud, name=None):
    return cloud.api.create_server(
        name or 'replay-%s' % uuid.uuid4().hex[:6],
        cloud.flavor['id'],
        cloud.image['id'],
    )['server']['id']


def _server(cloud, server_id):
    try:
        return cloud.api.server(server_id)
    except RuntimeError as exc:
        if ' 404 ' in str(exc):
            return None
        raise


def _settled(cloud, server_id):
    def done():
        server = _server(cloud, server_id)
        if server is None or server['status'] in ('ACTIVE', 'ERROR'):
            return server or {'status': 'DELETED'}
        return None

    return _wait(done, '%s to settle' % server_id)


def _active(cloud, server_id):
    server = _settled(cloud, server_id)
    assert server['status'] == 'ACTIVE', server.get('fault')
    return server


def _delete(cloud, server_id):
    cloud.api.delete('/servers/%s' % server_id)
    _wait(lambda: _server(cloud, server_id) is None, 'deleted')


def _allocations(cloud, consumer):
    response = requests.get(
        '%s/allocations/%s' % (cloud.placement_url, consumer),
        headers=PLACEMENT,
        timeout=30,
    )
    return {
        rp: alloc['resources']
        for rp, alloc in response.json()['allocations'].items()
    }


def _guests(cloud):
    """``{instance uuid: [hosts whose fake hypervisor holds it]}``."""
    found = {}
    virt = os.path.join(cloud.state_dir, 'fake-virt')
    for name in os.listdir(virt):
        if name.endswith('.json'):
            with open(os.path.join(virt, name)) as f:
                for uuid_ in json.load(f):
                    found.setdefault(uuid_, []).append(name[:-5])
    return found


def _built_once(cloud, server_id):
    """ACTIVE, one guest on its host, one allocation of the flavor."""
    server = _active(cloud, server_id)
    host = server['OS-EXT-SRV-ATTR:host']
    assert _guests(cloud).get(server_id) == [host]
    assert list(_allocations(cloud, server_id).values()) == [FLAVOR]
    return host


def _host_manager(cloud):
    for svc in cloud._stoppables:
        if getattr(svc, 'topic', None) == 'scheduler':
            return svc.endpoints[0].host_manager
    raise AssertionError('no scheduler in the cloud')


def _cell_db(cloud):
    return common_db.get_database(cloud.db_urls['cell1'])


def _cached(cloud, server_id):
    hm = _host_manager(cloud)
    return any(server_id in hs.instances for hs in hm.all_host_states())


def _infos(entry):
    info = entry[3]['instance_info']
    return info if isinstance(info, list) else [info]


def _updates_of(tape, server_id):
    """The recorded update_instance_info casts naming ``server_id``."""
    return [
        e
        for e in tape.find('cast', 'update_instance_info')
        if server_id in [i.get('uuid') for i in _infos(e)]
    ]


def _scheduler_applied(cloud, tape, host):
    """Wait until the scheduler applied every cache event sent so far: a
    marker update cast after them shows up in its cache (one bus, one
    server: in order)."""
    marker = str(uuid.uuid4())
    entry = tape.find('cast', 'update_instance_info')[-1]
    client, ctxt = entry[0], entry[1]
    tape.replay(
        (
            client,
            ctxt,
            'update_instance_info',
            {
                'host_name': host,
                'instance_info': {'uuid': marker, 'flavor_id': '1'},
            },
        )
    )
    _wait(lambda: _cached(cloud, marker), 'the marker in the cache')
    hm = _host_manager(cloud)
    _wait(lambda: hm.pending_events == 0, 'no event pending')


# -- builds ------------------------------------------------------------------


def test_every_build_cast_twice_builds_each_server_once(cloud, tape):
    tape.double = set(twice.METHODS)
    before = {s['id'] for s in cloud.api.servers()}
    booted = [_boot(cloud) for _ in range(6)]
    for server_id in booted:
        _built_once(cloud, server_id)
    tape.double = set()
    assert {s['id'] for s in cloud.api.servers()} == before | set(booted)
    # Each message went out twice, as the fault needs.
    for server_id in booted:
        sent = tape.find('cast', 'build_and_run_instance')
        assert any(e[3]['instance']['uuid'] == server_id for e in sent)
    with _cell_db(cloud).session() as session:
        for server_id in booted:
            tried = cell_instances.attempts(session, server_id)
            wins = [a for a in tried if a['result'] == 'success']
            assert len(wins) == 1, tried


def test_a_build_replayed_after_it_finished_changes_nothing(cloud, tape):
    server_id = _boot(cloud)
    host = _built_once(cloud, server_id)
    (entry,) = [
        e
        for e in tape.find('cast', 'build_and_run_instance')
        if e[3]['instance']['uuid'] == server_id
        and e[3]['selection']['service_host'] == host
    ]
    tape.replay(entry)
    (request,) = [
        e
        for e in tape.find('cast', 'schedule_and_build_instances')
        if server_id in e[3]['instance_uuids']
    ]
    tape.replay(request)
    # Another boot goes through the same services after both copies.
    _built_once(cloud, _boot(cloud))
    assert _built_once(cloud, server_id) == host


def test_a_reschedule_delivered_twice_moves_the_build_once(cloud, tape):
    tape.double = {'build_instances'}
    booted = []
    # host-3 fails every build; boot until one was rescheduled from it.
    for _ in range(12):
        booted.append(_boot(cloud))
        _settled(cloud, booted[-1])
        if tape.find('cast', 'build_instances'):
            break
    tape.double = set()
    rescheduled = tape.find('cast', 'build_instances')
    assert rescheduled, 'no build was rescheduled'
    for server_id in booted:
        assert _built_once(cloud, server_id) != 'host-3'
    # And once more, long after: still nothing moves.
    tape.replay(rescheduled[0])
    _built_once(cloud, _boot(cloud))
    for server_id in booted:
        assert _built_once(cloud, server_id) != 'host-3'


def test_a_build_attempt_recorded_twice_is_kept_once(cloud, tape):
    server_id = _boot(cloud)
    _built_once(cloud, server_id)
    with _cell_db(cloud).session() as session:
        before = cell_instances.attempts(session, server_id)
    assert before[-1]['result'] == 'success'
    # The success rides on the compute's final swap (cell conductor RPC
    # 1.4): that call again (a reply lost, the call retried) records
    # nothing more.
    (final,) = [
        e
        for e in tape.find('call', 'instance_update', instance_uuid=server_id)
        if e[3].get('build_attempt')
    ]
    tape.replay(final, 'call')
    with _cell_db(cloud).session() as session:
        assert cell_instances.attempts(session, server_id) == before


# -- deletes and late updates ------------------------------------------------


@pytest.mark.slow
def test_terminate_delivered_twice(cloud, tape):
    doomed, kept = _boot(cloud), _boot(cloud)
    _built_once(cloud, doomed)
    kept_host = _built_once(cloud, kept)
    _delete(cloud, doomed)
    (entry,) = tape.find('cast', 'terminate_instance', instance_uuid=doomed)
    tape.replay(entry)
    _built_once(cloud, _boot(cloud))
    assert _allocations(cloud, doomed) == {}
    assert doomed not in _guests(cloud)
    assert _built_once(cloud, kept) == kept_host


def test_an_instance_update_arriving_after_the_delete(cloud, tape):
    server_id = _boot(cloud)
    _built_once(cloud, server_id)
    (to_active,) = [
        e
        for e in tape.find('call', 'instance_update', instance_uuid=server_id)
        if e[3]['updates'].get('vm_state') == 'active'
    ]
    _delete(cloud, server_id)
    assert tape.replay(to_active, 'call') is None
    assert _server(cloud, server_id) is None
    assert _allocations(cloud, server_id) == {}
    with _cell_db(cloud).session() as session:
        row = cell_instances.get(session, server_id)
        assert row is None or row.deleted


def test_a_scheduler_update_arriving_after_the_delete(cloud, tape):
    server_id = _boot(cloud)
    host = _built_once(cloud, server_id)
    (update,) = _updates_of(tape, server_id)
    _delete(cloud, server_id)
    _wait(lambda: not _cached(cloud, server_id), 'the delete in the cache')
    tape.replay(update)
    tape.replay(update)
    _scheduler_applied(cloud, tape, host)
    assert not _cached(cloud, server_id)


def test_a_scheduler_delete_before_its_update(cloud, tape):
    server_id = _boot(cloud)
    host = _built_once(cloud, server_id)
    (update,) = _updates_of(tape, server_id)
    ghost = str(uuid.uuid4())
    client, ctxt = update[0], update[1]
    info = dict(_infos(update)[0], uuid=ghost)
    tape.replay(
        (
            client,
            ctxt,
            'delete_instance_info',
            {'host_name': host, 'instance_uuid': ghost},
        )
    )
    tape.replay(
        (
            client,
            ctxt,
            'update_instance_info',
            {'host_name': host, 'instance_info': info},
        )
    )
    _scheduler_applied(cloud, tape, host)
    assert not _cached(cloud, ghost)
    assert _cached(cloud, server_id)


def test_a_group_update_arriving_after_the_group_delete(cloud, tape):
    group = cloud.api.post(
        '/os-server-groups',
        {'server_group': {'name': 'late', 'policy': 'affinity'}},
    )['server_group']
    hm = _host_manager(cloud)
    _wait(lambda: hm.server_group(group['id']) is not None, 'group cached')
    (update,) = [
        e
        for e in tape.find('cast', 'update_server_group')
        if e[3]['group']['uuid'] == group['id']
    ]
    cloud.api.delete('/os-server-groups/%s' % group['id'])
    _wait(lambda: hm.server_group(group['id']) is None, 'group deleted')
    tape.replay(update)
    server_id = _boot(cloud)
    host = _built_once(cloud, server_id)
    _scheduler_applied(cloud, tape, host)
    assert hm.server_group(group['id']) is None


# -- heartbeats, node records, events -----------------------------------------


def _services(cloud):
    return {
        (s['host'], s['binary']): s
        for s in cloud.api.get('/os-services')['services']
    }


@pytest.mark.slow
def test_heartbeats_and_node_records_delivered_twice(cloud, tape):
    _wait(
        lambda: (
            tape.find('call', 'service_heartbeat')
            or tape.find('call', 'service_heartbeats')
        ),
        'a heartbeat',
    )
    _wait(lambda: tape.find('call', 'compute_node_update'), 'a node record')
    services = _services(cloud)
    nodes = cloud.api.get('/os-hypervisors/detail')['hypervisors']
    for method in ('service_heartbeat', 'service_heartbeats'):
        for entry in tape.find('call', method)[:3]:
            tape.replay(entry, 'call')
            tape.replay(entry, 'call')
    for entry in tape.find('call', 'compute_node_update')[:3]:
        tape.replay(entry, 'call')
        tape.replay(entry, 'call')
    again = _services(cloud)
    assert sorted(again) == sorted(services)
    assert all(s['state'] == 'up' for s in again.values())
    after = cloud.api.get('/os-hypervisors/detail')['hypervisors']
    assert sorted((h['id'], h['vcpus']) for h in after) == sorted(
        (h['id'], h['vcpus']) for h in nodes
    )
    _built_once(cloud, _boot(cloud))


def test_an_external_event_delivered_twice(cloud, tape):
    server_id = _boot(cloud)
    host = _built_once(cloud, server_id)
    entry = tape.find('cast', 'terminate_instance') or tape.find(
        'cast', 'build_and_run_instance'
    )
    client = entry[-1][0].prepare(server=host)
    ctxt = nimbus_context.get_admin_context()
    for _ in range(2):
        client.cast(
            ctxt,
            'external_instance_event',
            instance_uuid=server_id,
            events=[
                {
                    'name': 'accelerator-request-bound',
                    'tag': str(uuid.uuid4()),
                    'status': 'completed',
                }
            ],
        )
    _built_once(cloud, _boot(cloud))
    assert _built_once(cloud, server_id) == host


def test_a_partial_free_keeps_the_other_providers_share(cloud):
    """What a compute does when a build it spawned was moved on meanwhile
    (a late copy, a thawed host): it removes its own provider from the
    consumer's allocations and leaves the rest. (The PUT it sends at
    placement 1.39 needs the consumer's type; without it placement
    answered 400 and the share stayed.)"""
    from nimbus import services

    client = services.placement(cloud.conf)
    ctxt = nimbus_context.get_admin_context()
    providers = {
        rp['name']: rp['uuid']
        for rp in requests.get(
            cloud.placement_url + '/resource_providers',
            headers=PLACEMENT,
            timeout=30,
        ).json()['resource_providers']
    }
    consumer = str(uuid.uuid4())
    request = {
        'allocations': {
            providers['host-1']: {'resources': {'VCPU': 1}},
            providers['host-2']: {'resources': {'MEMORY_MB': 64}},
        }
    }
    assert client.claim(ctxt, consumer, request, 'p', 'u').claimed
    client.remove_provider_from_consumer(ctxt, consumer, [providers['host-1']])
    assert _allocations(cloud, consumer) == {
        providers['host-2']: {'MEMORY_MB': 64}
    }
    client.remove_allocations(ctxt, consumer)
