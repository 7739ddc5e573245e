"""PlacementClient.move_allocations and replace_allocations against a
real Nimbus placement (in process): the swaps a move makes, as Nova
makes them since Queens."""

import uuid

import pytest

from nimbus.common import exception
from tests.functional.scheduler.inproc_placement import RealPlacement

PROJECT, USER = 'proj', 'user'


@pytest.fixture
def placement(tmp_path):
    real = RealPlacement(tmp_path)
    yield real
    real.close()


def _providers(placement):
    source, dest = str(uuid.uuid4()), str(uuid.uuid4())
    placement.provider(source, 'source', {'VCPU': 8, 'MEMORY_MB': 4096})
    placement.provider(dest, 'dest', {'VCPU': 8, 'MEMORY_MB': 4096})
    return source, dest


def _claim(placement, consumer, rp, vcpu, ram):
    placement.client.replace_allocations(
        placement.ctxt,
        consumer,
        {rp: {'VCPU': vcpu, 'MEMORY_MB': ram}},
        PROJECT,
        USER,
    )


def _held(placement, consumer):
    got = placement.client.get_allocations_for_consumer(
        placement.ctxt, consumer
    )
    return {
        rp: a['resources'] for rp, a in (got.get('allocations') or {}).items()
    }


def _usage(placement, rp):
    response = placement.client.request(
        placement.ctxt, 'GET', '/resource_providers/%s/usages' % rp
    )
    return response.json()['usages']


def test_a_resize_holds_source_under_the_migration_and_dest_under_the_instance(
    placement,
):
    source, dest = _providers(placement)
    instance, migration = str(uuid.uuid4()), str(uuid.uuid4())
    _claim(placement, instance, source, 2, 512)

    # The move's start: the source's allocation goes to the migration.
    assert placement.client.move_allocations(
        placement.ctxt, instance, migration
    )
    assert _held(placement, instance) == {}
    assert _held(placement, migration) == {
        source: {'VCPU': 2, 'MEMORY_MB': 512}
    }
    got = placement.client.get_allocations_for_consumer(
        placement.ctxt, migration
    )
    assert (got['project_id'], got['user_id']) == (PROJECT, USER)
    assert got['consumer_type'] == 'MIGRATION'
    # The instance claims the (bigger) destination.
    _claim(placement, instance, dest, 4, 1024)
    assert _usage(placement, source) == {'VCPU': 2, 'MEMORY_MB': 512}
    assert _usage(placement, dest) == {'VCPU': 4, 'MEMORY_MB': 1024}

    # A revert: the destination is dropped, the source comes back.
    assert placement.client.move_allocations(
        placement.ctxt, migration, instance, target_type='INSTANCE'
    )
    assert _held(placement, instance) == {
        source: {'VCPU': 2, 'MEMORY_MB': 512}
    }
    assert _held(placement, migration) == {}
    assert _usage(placement, dest) == {'VCPU': 0, 'MEMORY_MB': 0}
    # Moving again from an empty consumer is a no-op, not an error.
    assert not placement.client.move_allocations(
        placement.ctxt, migration, instance, target_type='INSTANCE'
    )


def test_a_confirm_drops_the_migration_consumer(placement):
    source, dest = _providers(placement)
    instance, migration = str(uuid.uuid4()), str(uuid.uuid4())
    _claim(placement, instance, source, 1, 256)
    placement.client.move_allocations(placement.ctxt, instance, migration)
    _claim(placement, instance, dest, 1, 256)
    placement.client.replace_allocations(
        placement.ctxt, migration, {}, PROJECT, USER
    )
    assert _held(placement, migration) == {}
    assert _usage(placement, source) == {'VCPU': 0, 'MEMORY_MB': 0}
    assert _held(placement, instance) == {dest: {'VCPU': 1, 'MEMORY_MB': 256}}


def test_a_move_that_does_not_fit_is_refused_and_nothing_changes(placement):
    source, dest = _providers(placement)
    instance, migration = str(uuid.uuid4()), str(uuid.uuid4())
    _claim(placement, instance, source, 2, 512)
    placement.client.move_allocations(placement.ctxt, instance, migration)
    with pytest.raises(exception.PlacementError):
        _claim(placement, instance, dest, 64, 512)
    assert _held(placement, instance) == {}
    assert _held(placement, migration) == {
        source: {'VCPU': 2, 'MEMORY_MB': 512}
    }
