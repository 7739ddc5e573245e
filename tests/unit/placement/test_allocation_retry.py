"""Server-side retries of provider generation races in allocation writes.

A race is simulated by bumping the providers' generations right after the
allocation write read them (what a concurrent writer committing in between
would do). ``[placement] allocation_conflict_retry_count`` is the number of
attempts: a write that keeps losing answers 409 placement.concurrent_update
after exactly that many; one that wins a later attempt succeeds.
"""

import falcon.testing
import orjson
import pytest
import sqlalchemy as sa

from nimbus.common import db as common_db
from nimbus.placement import exception
from nimbus.placement import wsgi
from nimbus.placement.db import models as m
from nimbus.placement.objects import allocation
from nimbus.placement.objects import write_retry
from tests.functional.placement import fixtures

RP1 = '00000000-0000-0000-0000-0000000000a1'
RP2 = '00000000-0000-0000-0000-0000000000a2'
C1 = '00000000-0000-0000-0000-0000000000c1'
C2 = '00000000-0000-0000-0000-0000000000c2'
HEADERS = {
    'X-Auth-Token': 'admin',
    'X-Roles': 'admin,service',
    'OpenStack-API-Version': 'placement latest',
    'Content-Type': 'application/json',
}


class RacingWriter:
    """Wraps ``allocation._generations``: for the first ``races`` reads,
    moves every read provider's generation on, as a concurrent writer."""

    def __init__(self, monkeypatch, races):
        self.races = races
        self.reads = 0
        original = allocation._generations

        def racing(conn, rps, old_rps):
            generations = original(conn, rps, old_rps)
            self.reads += 1
            if self.reads <= self.races:
                conn.execute(
                    m.RP.update()
                    .where(m.RP.c.id.in_(list(generations)))
                    .values(generation=m.RP.c.generation + 1)
                )
            return generations

        monkeypatch.setattr(allocation, '_generations', racing)


@pytest.fixture
def make_client(tmp_path):
    with fixtures.fresh_database(tmp_path) as url:

        def make(retries):
            conf = fixtures.make_conf(
                url, placement={'allocation_conflict_retry_count': retries}
            )
            return falcon.testing.TestClient(
                wsgi.make_app(conf), headers=HEADERS
            )

        yield make
        common_db.get_database(url).dispose()


def _call(client, method, path, body=None):
    return client.simulate_request(
        method, path, body=None if body is None else orjson.dumps(body)
    )


def _setup(client):
    for uuid, name in ((RP1, 'one'), (RP2, 'two')):
        assert (
            _call(
                client,
                'POST',
                '/resource_providers',
                {'name': name, 'uuid': uuid},
            ).status_code
            == 200
        )
        assert (
            _call(
                client,
                'PUT',
                '/resource_providers/%s/inventories' % uuid,
                {
                    'resource_provider_generation': 0,
                    'inventories': {'VCPU': {'total': 8}},
                },
            ).status_code
            == 200
        )


def _claim(rp, vcpu=1, generation=None):
    return {
        'allocations': {rp: {'resources': {'VCPU': vcpu}}},
        'project_id': 'p',
        'user_id': 'u',
        'consumer_type': 'INSTANCE',
        'consumer_generation': generation,
    }


def _generation(client, rp):
    return _call(client, 'GET', '/resource_providers/' + rp).json['generation']


def test_race_is_retried_until_an_attempt_wins(make_client, monkeypatch):
    client = make_client(3)
    _setup(client)
    racer = RacingWriter(monkeypatch, races=2)
    response = _call(client, 'PUT', '/allocations/' + C1, _claim(RP1))
    assert response.status_code == 204
    assert racer.reads == 3
    # The racing bumps were rolled back with their attempts: one write.
    assert _generation(client, RP1) == 2
    body = _call(client, 'GET', '/allocations/' + C1).json
    assert body['allocations'][RP1]['resources'] == {'VCPU': 1}


@pytest.mark.parametrize('retries', [1, 4])
def test_lost_races_answer_409_after_retry_count_attempts(
    make_client, monkeypatch, retries
):
    client = make_client(retries)
    _setup(client)
    racer = RacingWriter(monkeypatch, races=1000)
    response = _call(client, 'PUT', '/allocations/' + C1, _claim(RP1))
    assert response.status_code == 409
    assert response.json['errors'][0]['code'] == 'placement.concurrent_update'
    assert racer.reads == retries
    assert _call(client, 'GET', '/allocations/' + C1).json == {
        'allocations': {}
    }
    assert _generation(client, RP1) == 1


def test_post_allocations_is_retried_and_delete_cannot_race(
    make_client, monkeypatch
):
    client = make_client(2)
    _setup(client)
    racer = RacingWriter(monkeypatch, races=1)
    response = _call(
        client, 'POST', '/allocations', {C1: _claim(RP1), C2: _claim(RP2)}
    )
    assert response.status_code == 204
    assert racer.reads == 2
    racer.reads, racer.races = 0, 1000
    # DELETE moves no provider generation (as Placement 16), so it has no
    # generation to race on.
    before = _generation(client, RP1)
    assert _call(client, 'DELETE', '/allocations/' + C1).status_code == 204
    assert racer.reads == 0
    assert _generation(client, RP1) == before
    assert _call(client, 'GET', '/allocations/' + C1).json == {
        'allocations': {}
    }


def test_reshaper_is_retried(make_client, monkeypatch):
    client = make_client(3)
    _setup(client)
    assert (
        _call(client, 'PUT', '/allocations/' + C1, _claim(RP1, 2)).status_code
        == 204
    )
    racer = RacingWriter(monkeypatch, races=2)
    body = {
        'inventories': {
            RP2: {
                'resource_provider_generation': 1,
                'inventories': {'VCPU': {'total': 4}},
            }
        },
        'allocations': {C1: dict(_claim(RP2, 2), consumer_generation=1)},
    }
    assert _call(client, 'POST', '/reshaper', body).status_code == 204
    assert racer.reads == 3
    allocs = _call(client, 'GET', '/allocations/' + C1).json['allocations']
    assert list(allocs) == [RP2]
    racer.reads, racer.races = 0, 1000
    # RP2 moved 1 -> 4: its inventory twice (Placement's interim and
    # final writes) and the allocations once.
    assert _generation(client, RP2) == 4
    body = {
        'inventories': {
            RP2: {
                'resource_provider_generation': 4,
                'inventories': {'VCPU': {'total': 8}},
            }
        },
        'allocations': {C1: dict(_claim(RP1, 2), consumer_generation=2)},
    }
    response = _call(client, 'POST', '/reshaper', body)
    assert response.status_code == 409
    assert response.json['errors'][0]['code'] == 'placement.concurrent_update'
    assert racer.reads == 3


def test_client_generation_conflicts_are_not_retried(make_client, monkeypatch):
    client = make_client(5)
    _setup(client)
    racer = RacingWriter(monkeypatch, races=0)
    assert (
        _call(client, 'PUT', '/allocations/' + C1, _claim(RP1)).status_code
        == 204
    )
    response = _call(
        client, 'PUT', '/allocations/' + C1, _claim(RP1, 2, generation=7)
    )
    assert response.status_code == 409
    assert response.json['errors'][0]['code'] == 'placement.concurrent_update'
    # One read for the first write; the stale consumer generation fails
    # before the providers are read, and is not tried again.
    assert racer.reads == 1


def test_write_retrying_raises_concurrent_update():
    calls = []

    class FakeDB:
        def write(self, fn, *args, **kwargs):
            calls.append(args)
            raise exception.ProviderGenerationRace()

    with pytest.raises(exception.ConcurrentUpdate) as info:
        write_retry.write_retrying(FakeDB(), 3, lambda conn: None)
    assert not isinstance(info.value, exception.ProviderGenerationRace)
    assert info.value.error_code == 'placement.concurrent_update'
    assert len(calls) == 3


def test_generation_compare_and_swap_detects_a_moved_provider(tmp_path):
    with fixtures.fresh_database(tmp_path) as url:
        from nimbus.placement import db as placement_db
        from nimbus.placement.objects import base

        placement_db.sync(url)
        pdb = base.PlacementDB(url)
        rp_id = pdb.write(
            lambda c: c.execute(
                m.RP.insert().values(uuid=RP1, name='one', generation=5)
            ).inserted_primary_key[0]
        )

        def stale(conn):
            allocation._increment_generations(conn, {rp_id: 4})

        with pytest.raises(exception.ProviderGenerationRace):
            pdb.write(stale)
        pdb.write(lambda c: allocation._increment_generations(c, {rp_id: 5}))
        assert (
            pdb.read(
                lambda c: c.execute(sa.select(m.RP.c.generation)).scalar()
            )
            == 6
        )
        pdb.database.dispose()
