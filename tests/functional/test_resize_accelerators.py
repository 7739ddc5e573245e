"""Resize and cold migrate of a server with a device profile (beyond
Nova, which refuses them), through the REST API of a whole in-process
cloud with the accelerator service and one agent per host: ARQs of the
new flavor bound on the destination before the finish, the source's
released only on confirm, the destination's deleted on revert or on a
failed move; the FPGA's allocation moves with the others. Every test
ends with :func:`tests.functional.fpga.settled`: each ARQ the service holds is bound to its
server's current host and is the server's own."""

import datetime
import threading

import pytest
import sqlalchemy as sa

from nimbus import services
from nimbus.common import context
from nimbus.common import db
from nimbus.common.db import types as db_types
from nimbus.compute import rpcapi as compute_rpcapi
from nimbus.conductor import recovery
from nimbus.db import cell_migrations
from nimbus.db.cell import models as cell_models

from tests.functional.fpga import accel_uuids
from tests.functional.fpga import booted
from tests.functional.fpga import by_host
from tests.functional.fpga import fail_binds_elsewhere
from tests.functional.fpga import fpga_cloud
from tests.functional.fpga import settled
from tests.functional.test_cross_cell_accelerators import (
    _conductor as restarted_conductor,
)
from tests.functional.test_server_actions import ADMIN
from tests.functional.test_server_resize import _wait_status
from tests.functional.test_server_resize import MoveApi
from tests.functional.test_shelve_evacuate import _arqs
from tests.functional.test_shelve_evacuate import _force_down


def _cloud(make_cloud, tmp_path, hosts=2):
    return fpga_cloud(make_cloud, tmp_path, MoveApi, hosts=hosts)


def _host(api, uuid):
    return api.show(uuid)['OS-EXT-SRV-ATTR:host']


def _resize(api, uuid, flavor):
    response = api.action(uuid, {'resize': {'flavorRef': flavor['id']}})
    assert response.status_code == 202, response.text


def test_resize_binds_on_the_destination_and_confirm_frees_the_source(
    make_cloud, tmp_path
):
    api = _cloud(make_cloud, tmp_path)
    uuid, source, first = booted(api)
    _resize(api, uuid, api.fpga_big)
    server, _ = api.wait(uuid, 'VERIFY_RESIZE')
    dest = server['OS-EXT-SRV-ATTR:host']
    assert dest != source
    arqs = _arqs(api, uuid)
    assert arqs[first] == ('Bound', source)  # kept until the confirm
    (second,) = set(arqs) - {first}
    assert arqs[second] == ('Bound', dest)
    assert accel_uuids(api, 'cell1', uuid) == [second]
    assert api.cloud.computes[dest].driver.attached_arqs(uuid) == [second]
    migration = api.migration(uuid)
    assert migration['details']['source_accel_uuids'] == [first]
    assert migration['details']['dest_accel_uuids'] == [second]
    # The device moved with the allocations: the instance holds the
    # destination's FPGA, the migration the source's.
    assert by_host(api, uuid) == {
        dest: {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 1, 'FPGA': 1}
    }
    assert by_host(api, migration['uuid']) == {
        source: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1, 'FPGA': 1}
    }
    response = api.action(uuid, {'confirmResize': None})
    assert response.status_code == 204, response.text
    api.wait(uuid, 'ACTIVE')
    _wait_status(api, uuid, 'confirmed')
    assert settled(api, uuid) == [second]
    assert api.allocations(migration['uuid']) == {}
    assert list(by_host(api, uuid)) == [dest]


def test_revert_deletes_the_destination_arqs_and_keeps_the_source(
    make_cloud, tmp_path
):
    api = _cloud(make_cloud, tmp_path)
    uuid, source, first = booted(api)
    _resize(api, uuid, api.fpga_big)
    api.wait(uuid, 'VERIFY_RESIZE')
    assert len(_arqs(api, uuid)) == 2
    migration = api.migration(uuid)
    response = api.action(uuid, {'revertResize': None})
    assert response.status_code == 202, response.text
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == source
    _wait_status(api, uuid, 'reverted')
    assert settled(api, uuid) == [first]
    assert api.allocations(migration['uuid']) == {}
    assert by_host(api, uuid) == {
        source: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1, 'FPGA': 1}
    }


def test_cold_migrate_binds_the_same_profile_on_the_destination(
    make_cloud, tmp_path
):
    api = _cloud(make_cloud, tmp_path)
    uuid, source, first = booted(api)
    response = api.action(uuid, {'migrate': None}, ADMIN)
    assert response.status_code == 202, response.text
    server, _ = api.wait(uuid, 'VERIFY_RESIZE')
    dest = server['OS-EXT-SRV-ATTR:host']
    assert dest != source
    migration = api.migration(uuid)
    assert migration['migration_type'] == 'migration'
    (second,) = set(_arqs(api, uuid)) - {first}
    assert _arqs(api, uuid)[second] == ('Bound', dest)
    response = api.action(uuid, {'confirmResize': None})
    assert response.status_code == 204, response.text
    api.wait(uuid, 'ACTIVE')
    _wait_status(api, uuid, 'confirmed')
    assert settled(api, uuid) == [second]
    assert by_host(api, uuid) == {
        dest: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1, 'FPGA': 1}
    }
    assert api.allocations(migration['uuid']) == {}


def test_a_failed_bind_on_the_destination_leaves_the_server_on_its_source(
    make_cloud, tmp_path
):
    api = _cloud(make_cloud, tmp_path)
    uuid, source, first = booted(api)
    dest = fail_binds_elsewhere(api, source)
    _resize(api, uuid, api.fpga_big)
    _wait_status(api, uuid, 'error')
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == source
    assert server['flavor']['vcpus'] == 1
    events = api.events(uuid, {'resize': ['compute_prep_resize']})
    assert events['resize']['compute_prep_resize'] == 'Error'
    assert 'No valid host' in api.fault(uuid)
    # Nothing leaked: the destination's ARQ is gone, the migration holds
    # nothing, the instance only its source (with its FPGA).
    assert settled(api, uuid) == [first]
    assert api.allocations(api.migration(uuid)['uuid']) == {}
    assert by_host(api, uuid) == {
        source: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1, 'FPGA': 1}
    }
    assert uuid not in api.cloud.computes[dest].driver.list_instances()
    # The device works again: the same resize now goes through.
    api.control.write_text('{}')
    _resize(api, uuid, api.fpga_big)
    server, _ = api.wait(uuid, 'VERIFY_RESIZE')
    assert server['OS-EXT-SRV-ATTR:host'] == dest


def test_rebuild_keeps_the_arqs_bound_on_the_host(make_cloud, tmp_path):
    api = _cloud(make_cloud, tmp_path)
    uuid, host, first = booted(api)
    image = api.admin.create_image('ubuntu')
    response = api.action(uuid, {'rebuild': {'imageRef': image['id']}})
    assert response.status_code == 202, response.text
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == host
    assert settled(api, uuid) == [first]


def test_evacuate_binds_new_arqs_on_the_new_host(make_cloud, tmp_path):
    api = _cloud(make_cloud, tmp_path)
    uuid, source, first = booted(api)
    api.cloud.stop_compute(source)
    _force_down(api, source)
    response = api.action(uuid, {'evacuate': {}}, ADMIN, version='2.68')
    assert response.status_code == 200, response.text
    server, _ = api.wait(uuid, 'ACTIVE')
    dest = server['OS-EXT-SRV-ATTR:host']
    assert dest != source
    (second,) = settled(api, uuid)  # the source's ARQ is gone
    assert second != first
    assert by_host(api, uuid) == {
        dest: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1, 'FPGA': 1}
    }
    # The source's, device included, waits for the source to come back.
    (migration,) = api.migrations(uuid)
    assert by_host(api, migration['uuid']) == {
        source: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1, 'FPGA': 1}
    }


@pytest.mark.parametrize('recorded', [True, False])
def test_a_destination_killed_in_its_prep_leaves_no_arq(
    make_cloud, tmp_path, monkeypatch, recorded
):
    """The destination dies in ``prep_resize`` after it bound the new
    flavor's ARQs, recorded on the migration or not (killed between the
    bind and the record): the move stays waiting, the recovery pass undoes
    it, and the destination's ARQs go with it; the server keeps its own."""
    api = fpga_cloud(
        make_cloud,
        tmp_path,
        MoveApi,
        hosts=2,
        overrides={
            'conductor': {'recovery_interval': 0, 'build_request_timeout': 60}
        },
    )
    uuid, source, first = booted(api)
    died = threading.Event()

    def dies_before_the_cast(self, *args, **kwargs):
        died.set()

    monkeypatch.setattr(
        compute_rpcapi.ComputeAPI, 'resize_instance', dies_before_the_cast
    )
    _resize(api, uuid, api.fpga_big)
    assert died.wait(60), 'the destination never reached its cast'
    monkeypatch.undo()
    migration = api.migration(uuid)
    assert migration['status'] == 'pre-migrating'
    (second,) = set(_arqs(api, uuid)) - {first}
    dest = migration['dest_compute']
    assert dest != source and _arqs(api, uuid)[second] == ('Bound', dest)
    assert migration['details']['dest_accel_uuids'] == [second]
    database = db.get_database(api.cloud.db_urls['cell1'])
    with database.session() as session:
        if not recorded:
            details = dict(migration['details'])
            del details['dest_accel_uuids']
            cell_migrations.update(session, migration['uuid'], details=details)
        session.execute(
            sa.update(cell_models.Instance)
            .where(cell_models.Instance.uuid == uuid)
            .values(updated_at=db_types.utcnow() - datetime.timedelta(hours=1))
        )
    checker = recovery.Recovery(
        services.auditor(api.cloud.conf), restarted_conductor(api)
    )
    assert checker.run(context.get_admin_context()) == {'stuck_move': 1}
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == source
    assert api.migration(uuid)['status'] == 'error'
    assert settled(api, uuid) == [first]
    assert by_host(api, uuid) == {
        source: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1, 'FPGA': 1}
    }
