"""A resize and a cold migrate to another cell of a server with a device
profile (beyond Nova, which moves no such server; the same-cell move is
tests/functional/test_resize_accelerators.py): the in-process cloud with
the accelerator service, one agent per host in both cells (cell1: the
source host; cell2: two), the cross-cell policy allowed to admins. The
destination binds ARQs of the new flavor's profile before the source lets
the guest go; the FPGA's allocation moves with the others; confirm frees
the source's ARQs, revert the destination's; a failed bind and a move
interrupted by a dead super conductor leave nothing behind. Every test
ends with :func:`tests.functional.fpga.settled`: each ARQ the service holds is bound to the
server on its current host, and is the one the server's record (in the
cell it is mapped to) and its guest name."""

import json

import pytest

from nimbus import services
from nimbus.common import context
from nimbus.conductor import cross_cell_recovery
from nimbus.conductor import super_conductor
from nimbus.db import cell_migrations
from tests.functional.fpga import accel_uuids
from tests.functional.fpga import by_host
from tests.functional.fpga import fpga_cloud
from tests.functional.fpga import settled
from tests.functional.test_cross_cell_faults import _age
from tests.functional.test_cross_cell_faults import _die_at
from tests.functional.test_cross_cell_resize import _wait_migration
from tests.functional.test_cross_cell_resize import CrossCellApi
from tests.functional.test_cross_cell_resize import POLICY
from tests.functional.test_cross_cell_resize import SOURCE
from tests.functional.test_server_actions import ADMIN
from tests.functional.test_shelve_evacuate import _arqs

SMALL = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1, 'FPGA': 1}
BIG = {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 1, 'FPGA': 1}


@pytest.fixture
def api(make_cloud, tmp_path):
    policy = tmp_path / 'policy.yaml'
    policy.write_text(POLICY)
    api = fpga_cloud(
        make_cloud,
        tmp_path,
        CrossCellApi,
        # The recovery test runs the pass itself: the cloud's own would
        # race it for the aged migration on a slow machine.
        overrides={
            'oslo_policy': {'policy_file': str(policy)},
            'conductor': {'recovery_interval': 0},
        },
        hosts=1,
        cell2_hosts=2,
    )
    return api


def _move(api, uuid, kind):
    body = (
        {'resize': {'flavorRef': api.fpga_big['id']}}
        if kind == 'resize'
        else {'migrate': None}
    )
    response = api.action(uuid, body, who=ADMIN)
    assert response.status_code == 202, response.text


def _in_target(api, uuid, first):
    """The server in VERIFY_RESIZE in cell2: the destination's new ARQ
    bound there and named by the target's record, the source's kept (and
    named by the source's hidden copy) until the end; their uuids, the
    destination and the migration."""
    server, _ = api.wait(uuid, 'VERIFY_RESIZE')
    _wait_migration(api, uuid, 'finished')
    dest = server['OS-EXT-SRV-ATTR:host']
    assert dest in api.cloud.cell2_host_names()
    assert api.mapped_cell(uuid) == 'cell2'
    arqs = _arqs(api, uuid)
    assert arqs[first] == ('Bound', SOURCE)
    (second,) = set(arqs) - {first}
    assert arqs[second] == ('Bound', dest)
    assert accel_uuids(api, 'cell2', uuid) == [second]
    assert accel_uuids(api, 'cell1', uuid) == [first]
    assert api.cloud.computes[dest].driver.attached_arqs(uuid) == [second]
    for cell in ('cell1', 'cell2'):
        record = api.migrations_in(cell, uuid)[-1]
        assert record['details']['source_accel_uuids'] == [first]
        assert record['details']['dest_accel_uuids'] == [second]
    return second, dest, record['uuid']


def _heard(api, monkeypatch):
    """{host: [(instance, event name, tag)]}: the external events each
    cell2 compute is given from now on."""
    heard = {}
    for host in api.cloud.cell2_host_names():
        events = api.cloud.computes[host].events
        deliver = events.deliver

        def spy(uuid, got, host=host, deliver=deliver):
            heard.setdefault(host, []).extend(
                (uuid, e.name, e.tag) for e in got
            )
            return deliver(uuid, got)

        monkeypatch.setattr(events, 'deliver', spy)
    return heard


@pytest.mark.parametrize('kind', ['resize', 'migrate'])
def test_a_move_to_another_cell_binds_there_and_confirm_frees_the_source(
    api, monkeypatch, kind
):
    uuid = api.boot_on_source()
    (first,) = settled(api, uuid, api.mapped_cell(uuid))
    heard = _heard(api, monkeypatch)
    _move(api, uuid, kind)
    second, dest, migration = _in_target(api, uuid, first)
    # The service's accelerator-request-bound reached the destination on
    # its own cell's bus (the server still mapped to the source's).
    assert (uuid, 'accelerator-request-bound', second) in heard[dest]
    new = BIG if kind == 'resize' else SMALL
    # The device moved with the allocations: the instance holds the
    # destination's FPGA, the migration the source's.
    assert by_host(api, uuid) == {dest: new}
    assert by_host(api, migration) == {SOURCE: SMALL}
    events = api.events(uuid)
    action = 'resize' if kind == 'resize' else 'migrate'
    assert (
        events[action]['compute_prep_snapshot_based_resize_at_dest']
        == 'Success'
    )
    response = api.action(uuid, {'confirmResize': None}, who=ADMIN)
    assert response.status_code == 204, response.text
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == dest
    assert api.migrations_in('cell2', uuid)[0]['status'] == 'confirmed'
    assert settled(api, uuid, api.mapped_cell(uuid)) == [second]
    assert api.rows('cell1', uuid) == []
    assert api.allocations(migration) == {}
    assert by_host(api, uuid) == {dest: new}


def test_revert_deletes_the_destination_arqs_and_keeps_the_source(api):
    uuid = api.boot_on_source()
    (first,) = settled(api, uuid, api.mapped_cell(uuid))
    _move(api, uuid, 'resize')
    second, dest, migration = _in_target(api, uuid, first)
    response = api.action(uuid, {'revertResize': None}, who=ADMIN)
    assert response.status_code == 202, response.text
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == SOURCE
    assert server['flavor']['vcpus'] == 1
    _wait_migration(api, uuid, 'reverted')
    assert api.mapped_cell(uuid) == 'cell1'
    assert settled(api, uuid, api.mapped_cell(uuid)) == [first]
    assert second not in _arqs(api, uuid)
    assert api.rows('cell2', uuid) == []
    assert uuid not in api.guests(dest)
    assert api.allocations(migration) == {}
    assert by_host(api, uuid) == {SOURCE: SMALL}


def test_a_stopped_server_moves_with_its_devices_and_stays_off(api):
    uuid = api.boot_on_source()
    (first,) = settled(api, uuid, api.mapped_cell(uuid))
    response = api.action(uuid, {'os-stop': None}, who=ADMIN)
    assert response.status_code == 202, response.text
    api.wait(uuid, 'SHUTOFF')
    _move(api, uuid, 'resize')
    second, dest, migration = _in_target(api, uuid, first)
    assert api.show(uuid)['OS-EXT-STS:power_state'] == 4  # shutdown
    response = api.action(uuid, {'confirmResize': None}, who=ADMIN)
    assert response.status_code == 204, response.text
    server, _ = api.wait(uuid, 'SHUTOFF')
    assert server['OS-EXT-SRV-ATTR:host'] == dest
    assert settled(api, uuid, api.mapped_cell(uuid)) == [second]
    assert api.allocations(migration) == {}


def _no_trace_in_cell2(api, uuid):
    assert api.rows('cell2', uuid) == []
    assert api.migrations_in('cell2', uuid) == []
    for host in api.cloud.cell2_host_names():
        assert uuid not in api.guests(host)


def test_a_failed_bind_on_the_destination_leaves_the_server_on_its_source(api):
    uuid = api.boot_on_source()
    (first,) = settled(api, uuid, api.mapped_cell(uuid))
    api.control.write_text(
        json.dumps({'fail_hosts': api.cloud.cell2_host_names()})
    )
    _move(api, uuid, 'resize')
    record = _wait_migration(api, uuid, 'error')
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == SOURCE
    assert server['flavor']['vcpus'] == 1
    assert server['OS-EXT-STS:power_state'] == 1  # never let go
    assert api.mapped_cell(uuid) == 'cell1'
    fault = api.fault(uuid)
    assert 'undone' in fault and 'failed to bind' in fault, fault
    events = api.events(
        uuid, {'resize': ['compute_prep_snapshot_based_resize_at_dest']}
    )
    assert (
        events['resize']['compute_prep_snapshot_based_resize_at_dest']
        == 'Error'
    )
    assert (
        'compute_prep_snapshot_based_resize_at_source'
        not in (events['resize'])
    )
    # Nothing leaked: the accelerator service holds the source's ARQ
    # only, placement nothing on the migration and the instance only its
    # source (with its FPGA), cell2 nothing.
    assert settled(api, uuid, api.mapped_cell(uuid)) == [first]
    assert api.allocations(record['uuid']) == {}
    assert by_host(api, uuid) == {SOURCE: SMALL}
    _no_trace_in_cell2(api, uuid)
    # The devices work again: the same move now goes through.
    api.control.write_text('{}')
    _move(api, uuid, 'resize')
    _in_target(api, uuid, first)


def _conductor(api):
    """A super conductor as the one restarted after the crash (with the
    accelerator client, as nimbus.services builds it)."""
    conf = api.cloud.conf
    return super_conductor.SuperConductor(
        conf,
        services.api_db(conf),
        services.cell_directory(conf),
        services.scheduler_api(conf),
        services.placement(conf),
        accelerator=services.accelerator_binder(conf),
    )


def _forget_dest_arqs(api, migration):
    """As if the process died between binding the destination's ARQs and
    recording them: no migration names them."""
    for cell in ('cell1', 'cell2'):
        with api.db(cell).session() as session:
            found = cell_migrations.get(session, migration)
            details = dict(found['details'])
            details.pop('dest_accel_uuids', None)
            cell_migrations.update(session, migration, details=details)


@pytest.mark.parametrize('recorded', [True, False])
def test_a_move_interrupted_after_the_bind_is_undone_without_a_leak(
    api, monkeypatch, recorded
):
    """The super conductor dies once the destination bound its ARQs (the
    source fails to let the guest go and nothing is rolled back); its
    recovery pass undoes the move and deletes the destination's ARQs,
    recorded or not."""
    uuid = api.boot_on_source()
    (first,) = settled(api, uuid, api.mapped_cell(uuid))
    _die_at(api, monkeypatch, 'prep_source')
    _move(api, uuid, 'resize')
    left = _wait_migration(api, uuid, 'migrating')
    migration = left['uuid']
    (second,) = set(_arqs(api, uuid)) - {first}
    assert left['details']['dest_accel_uuids'] == [second]
    if not recorded:
        _forget_dest_arqs(api, migration)
    monkeypatch.undo()
    _age(api, 'cell1', migration)
    ctxt = context.get_admin_context()
    assert cross_cell_recovery.settle_interrupted(
        _conductor(api), ctxt, 300
    ) == {'undone': 1, 'switched': 0}
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == SOURCE
    assert api.mapped_cell(uuid) == 'cell1'
    (record,) = api.migrations_in('cell1', uuid)
    assert record['status'] == 'error'
    assert settled(api, uuid, api.mapped_cell(uuid)) == [first]
    assert api.allocations(migration) == {}
    assert by_host(api, uuid) == {SOURCE: SMALL}
    _no_trace_in_cell2(api, uuid)
