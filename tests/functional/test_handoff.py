"""The super conductor hands a multi-create's placed instances to their cell
in a few transactions (nimbus.conductor.handoff), in an all-in-one cloud."""

import pytest
import sqlalchemy as sa

from nimbus.common import db as common_db
from nimbus.compute import rpcapi as compute_rpcapi
from nimbus.db import build_requests
from nimbus.db import cell_instances
from nimbus.db.api import models as api_models
from nimbus.db.cell import models as cell_models
from tests.functional.scheduler import fixtures as fx


def _api(make_cloud):
    cloud = make_cloud(hosts=4)
    api = fx.admin_client(cloud)
    api.flavor = api.create_flavor('f', 1, 256, 1)
    api.image = api.create_image('img')
    return api


def _boot(api, name, count):
    api.create_server(
        name,
        api.flavor['id'],
        api.image['id'],
        min_count=count,
        max_count=count,
    )
    ids = fx.wait_for(
        lambda: (
            [s['id'] for s in api.servers() if s['name'].startswith(name)]
            if len([s for s in api.servers() if s['name'].startswith(name)])
            == count
            else None
        ),
        timeout=30,
        what='servers of %s' % name,
    )
    return ids


def _cell_rows(cloud):
    with common_db.get_database(cloud.db_urls['cell1']).session() as s:
        return [
            (r.uuid, r.vm_state, r.host)
            for r in s.execute(sa.select(cell_models.Instance)).scalars()
        ]


def _mapped(cloud, uuids):
    with common_db.get_database(cloud.db_urls['api']).session() as s:
        return {
            m.instance_uuid: m.cell_id
            for m in s.execute(
                sa.select(api_models.InstanceMapping).where(
                    api_models.InstanceMapping.instance_uuid.in_(uuids)
                )
            ).scalars()
        }


@pytest.mark.slow
def test_batch_builds_each_instance_once_with_its_own_spec(
    make_cloud, monkeypatch
):
    sent = []
    real = compute_rpcapi.ComputeAPI.build_and_run_instance

    def spy(self, ctxt, host, instance, request_spec, *args, **kw):
        sent.append((instance.uuid, list(request_spec.instance_uuids)))
        return real(self, ctxt, host, instance, request_spec, *args, **kw)

    monkeypatch.setattr(
        compute_rpcapi.ComputeAPI, 'build_and_run_instance', spy
    )
    api = _api(make_cloud)
    ids = _boot(api, 'batch', 6)
    servers = {u: s for u, s in fx.settle(api, ids).items() if u in ids}
    assert {s['status'] for s in servers.values()} == {'ACTIVE'}
    # One build cast each, carrying a request spec of that instance alone.
    assert sorted(sent) == sorted((u, [u]) for u in ids)
    rows = _cell_rows(api.cloud)
    assert sorted(u for u, _s, _h in rows) == sorted(ids)
    assert set(_mapped(api.cloud, ids).values()) != {None}
    for server in servers.values():
        host = fx.host_of(server)
        assert (server['id'], 'active', host) in rows


@pytest.mark.slow
def test_failed_batch_goes_one_at_a_time(make_cloud, monkeypatch):
    """The cell insert of the batch fails: every instance still goes to its
    cell once, through the one-at-a-time path."""

    def broken(session, values_list):
        raise RuntimeError('cell database hiccup')

    monkeypatch.setattr(cell_instances, 'create_many', broken)
    api = _api(make_cloud)
    ids = _boot(api, 'fallback', 5)
    servers = fx.settle(api, ids)
    assert {servers[u]['status'] for u in ids} == {'ACTIVE'}
    rows = _cell_rows(api.cloud)
    assert sorted(u for u, _s, _h in rows) == sorted(ids)


@pytest.mark.slow
def test_lease_taken_over_is_left_to_its_holder(make_cloud, monkeypatch):
    """A build request whose lease another worker took over during the
    hand-off is not ended, mapped nor built by this one; the others are."""
    real = build_requests.delete_leased_many
    stolen = []

    def take_one_over(session, uuids, token):
        victim = sorted(uuids)[0]
        session.execute(
            sa.update(api_models.BuildRequest)
            .where(api_models.BuildRequest.instance_uuid == victim)
            .values(schedule_token='another-worker')
        )
        stolen.append(victim)
        return real(session, uuids, token)

    monkeypatch.setattr(build_requests, 'delete_leased_many', take_one_over)
    api = _api(make_cloud)
    ids = _boot(api, 'lease', 4)
    (victim,) = fx.wait_for(
        lambda: stolen or None, timeout=30, what='the hand-off'
    )
    others = [u for u in ids if u != victim]
    servers = fx.settle(api, others)
    assert {servers[u]['status'] for u in others} == {'ACTIVE'}
    assert servers[victim]['status'] == 'BUILD'
    mapped = _mapped(api.cloud, ids)
    assert mapped[victim] is None
    assert all(mapped[u] is not None for u in others)
    with common_db.get_database(api.cloud.db_urls['api']).session() as s:
        row = build_requests.get(s, victim)
        assert row is not None and row.schedule_token == 'another-worker'
    states = {u: st for u, st, _h in _cell_rows(api.cloud)}
    assert states[victim] == 'building'


@pytest.mark.slow
def test_batch_gives_each_server_its_hosts_zone(make_cloud):
    """A multi-create without a zone: each server takes its host's (an
    aggregate's zone, else the default), looked up for all hosts at once."""
    api = _api(make_cloud)
    hosts = sorted(
        h['hypervisor_hostname']
        for h in api.get('/os-hypervisors')['hypervisors']
    )
    fx.create_aggregate(api, 'east', hosts[:2], zone='east')
    ids = _boot(api, 'zoned', 8)
    servers = fx.settle(api, ids)
    for uuid in ids:
        server = servers[uuid]
        assert server['status'] == 'ACTIVE'
        want = 'east' if fx.host_of(server) in hosts[:2] else 'nova'
        assert server['OS-EXT-AZ:availability_zone'] == want
