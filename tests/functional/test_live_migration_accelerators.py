"""Live migration of a server with a device profile (beyond Nova, which
refuses it), through the REST API of a whole in-process cloud with the
accelerator service and one agent per host: new ARQs of the server's
profile bound on the destination before the copy starts, made the
server's when the guest runs there (the source's deleted), deleted on an
abort or a failed bind (the source's kept); the FPGA's allocation moves
with the others. Every test ends with ``tests.functional.fpga.settled``: each ARQ the service
holds is bound to the server on its current host and is the server's
own, and placement holds one allocation set."""

import json
import time

from tests.functional.fpga import booted
from tests.functional.fpga import by_host
from tests.functional.fpga import fail_binds_elsewhere
from tests.functional.fpga import fpga_cloud
from tests.functional.fpga import settled
from tests.functional.test_resize_accelerators import _host
from tests.functional.test_server_actions import ADMIN
from tests.functional.test_server_live_migration import _live
from tests.functional.test_server_live_migration import _wait_migration
from tests.functional.test_server_resize import MoveApi
from tests.functional.test_shelve_evacuate import _arqs

SMALL = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1, 'FPGA': 1}


def _cloud(make_cloud, tmp_path, seconds=0.2, bind_timeout=300):
    return fpga_cloud(
        make_cloud,
        tmp_path,
        MoveApi,
        overrides={
            'compute': {'arq_binding_timeout': bind_timeout},
            'fake_driver': {
                'live_migration_seconds': seconds,
                'live_migration_step_seconds': 0.05,
            },
        },
        hosts=2,
    )


def _one_set(api, uuid, migration, host):
    """Placement holds the instance's allocation on ``host``, its FPGA
    included, and nothing for the migration."""
    assert api.allocations(migration['uuid']) == {}
    assert by_host(api, uuid) == {host: SMALL}


def test_live_migration_binds_on_the_destination_and_frees_the_source(
    make_cloud, tmp_path
):
    api = _cloud(make_cloud, tmp_path)
    uuid, source, first = booted(api)
    response = _live(api, uuid)
    assert response.status_code == 202, response.text
    migration = _wait_migration(api, uuid, ('completed', 'error'))
    assert migration['status'] == 'completed'
    server, _ = api.wait(uuid, 'ACTIVE')
    dest = server['OS-EXT-SRV-ATTR:host']
    assert dest != source
    (second,) = settled(api, uuid)  # the source's ARQ is gone
    assert second != first
    assert migration['details']['source_accel_uuids'] == [first]
    assert migration['details']['dest_accel_uuids'] == [second]
    _one_set(api, uuid, migration, dest)
    events = api.events(uuid, {'live-migration': ['compute_live_migration']})
    assert events['live-migration']['compute_pre_live_migration'] == 'Success'
    assert events['live-migration']['compute_live_migration'] == 'Success'


def test_the_destination_hears_of_its_bind_while_the_server_is_elsewhere(
    make_cloud, tmp_path
):
    """The bind is held until the destination waits for it: its
    ``accelerator-request-bound`` event must reach the destination (the
    server still shows its source), or the wait times out and the move
    rolls back."""
    api = _cloud(make_cloud, tmp_path, bind_timeout=20)
    uuid, source, first = booted(api)
    api.control.write_text(json.dumps({'hold': True}))
    assert _live(api, uuid).status_code == 202
    migration = _wait_migration(api, uuid, ('preparing', 'error'))
    deadline = time.monotonic() + 30
    while len(_arqs(api, uuid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    (second,) = set(_arqs(api, uuid)) - {first}
    assert _arqs(api, uuid)[second][0] != 'Bound'
    assert _host(api, uuid) == source
    api.control.write_text('{}')
    done = _wait_migration(api, uuid, ('completed', 'error'))
    assert done['status'] == 'completed', api.fault(uuid)
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == migration['dest_compute']
    assert settled(api, uuid) == [second]
    _one_set(api, uuid, done, migration['dest_compute'])


def test_abort_mid_copy_deletes_the_destination_arqs(make_cloud, tmp_path):
    api = _cloud(make_cloud, tmp_path, seconds=600)
    uuid, source, first = booted(api)
    assert _live(api, uuid).status_code == 202
    migration = _wait_migration(api, uuid, ('running',))
    dest = migration['dest_compute']
    # While the copy runs: both hosts hold a bound ARQ for the server;
    # the instance holds the destination's FPGA, the migration the
    # source's; the server still records the source's ARQ.
    arqs = _arqs(api, uuid)
    (second,) = set(arqs) - {first}
    assert arqs == {first: ('Bound', source), second: ('Bound', dest)}
    assert migration['details']['dest_accel_uuids'] == [second]
    assert by_host(api, uuid) == {dest: SMALL}
    assert by_host(api, migration['uuid']) == {source: SMALL}
    path = '/servers/%s/migrations/%s' % (uuid, migration['id'])
    response = api.call('DELETE', path, who=ADMIN, version='2.24')
    assert response.status_code == 202, response.text
    done = _wait_migration(api, uuid, ('cancelled', 'error', 'completed'))
    assert done['status'] == 'cancelled'
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == source
    api.events(
        uuid,
        {'live-migration': ['compute_rollback_live_migration_at_destination']},
    )
    assert settled(api, uuid) == [first]
    _one_set(api, uuid, done, source)
    assert uuid not in api.cloud.computes[dest].driver.list_instances()


def test_a_failed_bind_on_the_destination_leaves_the_server_on_its_source(
    make_cloud, tmp_path
):
    api = _cloud(make_cloud, tmp_path)
    uuid, source, first = booted(api)
    dest = fail_binds_elsewhere(api, source)
    assert _live(api, uuid).status_code == 202
    migration = _wait_migration(api, uuid, ('completed', 'error'))
    assert migration['status'] == 'error'
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == source
    events = api.events(
        uuid,
        {
            'live-migration': [
                'compute_live_migration',
                'compute_rollback_live_migration_at_destination',
            ]
        },
    )
    assert events['live-migration']['compute_pre_live_migration'] == 'Error'
    assert events['live-migration']['compute_live_migration'] == 'Error'
    assert 'pre_live_migration failed' in api.fault(uuid)
    # Nothing leaked: no ARQ on the destination, the migration holds
    # nothing, the instance only its source (with its FPGA).
    assert settled(api, uuid) == [first]
    _one_set(api, uuid, migration, source)
    assert uuid not in api.cloud.computes[dest].driver.list_instances()
    # The device works again: the same live migration now goes through.
    api.control.write_text('{}')
    assert _live(api, uuid).status_code == 202
    second = _wait_migration(api, uuid, ('completed', 'error'))
    assert second['status'] == 'completed', second
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == dest
    (bound,) = settled(api, uuid)
    assert bound != first
    _one_set(api, uuid, second, dest)
