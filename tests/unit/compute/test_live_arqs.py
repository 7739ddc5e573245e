"""The ARQs of a live migration on the computes
(nimbus/compute/live_migration.py and move_arqs.py, with the recording
fakes of test_resize_arqs around them): the destination binds, records
and waits before the copy; the guest is spawned with its ARQs, which
become the instance's; a rollback on the source deletes the
destination's."""

from nimbus.common.clients import arq_binding
from nimbus.common.objects import migration as migration_obj
from nimbus.compute import live_migration
from nimbus.compute import move_arqs
from tests.unit.compute.test_resize_arqs import DEST_ARQ
from tests.unit.compute.test_resize_arqs import FPGA
from tests.unit.compute.test_resize_arqs import SOURCE_ARQ
from tests.unit.compute.test_resize_arqs import Arqs
from tests.unit.compute.test_resize_arqs import Conductor
from tests.unit.compute.test_resize_arqs import Driver
from tests.unit.compute.test_resize_arqs import Recorder

MAPPINGS = {'_device_profile_0': ['rp-fpga-dest']}


class Spawning(Driver):
    def __init__(self, fail=()):
        super().__init__(fail)
        self.spawned = []

    def spawn(self, instance, network_info, arqs=None):
        self.spawned.append(arqs)


def _live(status, details, arqs, driver=None, host='dest'):
    conductor = Conductor()
    conductor.migration = migration_obj.Migration(
        uuid='mig',
        instance_uuid='inst',
        migration_type='live-migration',
        status=status,
        source_compute='src',
        dest_compute='dest',
        dest_node='dest-node',
        new_flavor=FPGA,
        details=details,
    )
    compute_api, placement = Recorder(), Recorder()
    moves = live_migration.LiveMigrations(
        host,
        driver or Spawning(),
        conductor,
        placement,
        compute_api,
        None,
        arqs,
    )
    return moves, conductor, compute_api


def test_the_destination_binds_with_the_recorded_group_mappings():
    migration = migration_obj.Migration(
        uuid='mig',
        instance_uuid='inst',
        migration_type='live-migration',
        status='preparing',
        dest_node='dest-node',
        details={move_arqs.MAPPINGS: MAPPINGS},
    )
    selection = move_arqs.live_selection(migration, 'dest')
    assert (selection.service_host, selection.nodename) == (
        'dest',
        'dest-node',
    )
    arqs = [{'uuid': DEST_ARQ, 'device_profile_group_id': 0}]
    assert arq_binding.match_arqs(arqs, selection.allocation_request) == {
        DEST_ARQ: 'rp-fpga-dest'
    }


def test_pre_live_migration_records_then_waits():
    arqs = Arqs()
    details = {'source_accel_uuids': [SOURCE_ARQ], 'dest_device_mappings': {}}
    moves, conductor, _ = _live('preparing', details, arqs)
    answer = moves.pre_live_migration(None, 'req', conductor.migration, {})
    assert answer['ok'] is True
    assert conductor.migration.status == 'preparing'
    assert conductor.migration.details['dest_accel_uuids'] == [DEST_ARQ]
    assert conductor.migration.details['source_accel_uuids'] == [SOURCE_ARQ]
    assert arqs.deleted == []


def test_a_failed_bind_fails_pre_live_migration_and_deletes_them():
    arqs = Arqs(fail_wait=True)
    moves, conductor, _ = _live('preparing', {}, arqs)
    answer = moves.pre_live_migration(None, 'req', conductor.migration, {})
    assert answer['ok'] is False
    assert arqs.deleted == [DEST_ARQ]


def test_post_spawns_with_the_destination_arqs_and_gives_them_the_instance():
    driver = Spawning()
    details = {
        'source_accel_uuids': [SOURCE_ARQ],
        'dest_accel_uuids': [DEST_ARQ],
    }
    moves, conductor, _ = _live('running', details, Arqs(), driver)
    answer = moves.post_live_migration_at_destination(
        None, 'req', conductor.migration
    )
    assert answer['ok'] is True
    assert driver.spawned == [[{'uuid': DEST_ARQ}]]
    assert conductor.steps[-1][1]['accel_uuids'] == [DEST_ARQ]
    assert conductor.steps[-1][1]['host'] == 'dest'


def test_a_rollback_on_the_source_deletes_the_destination_arqs():
    arqs = Arqs()
    details = {
        'source_accel_uuids': [SOURCE_ARQ],
        'dest_accel_uuids': [DEST_ARQ],
    }
    moves, conductor, compute_api = _live('running', details, arqs, host='src')
    moves.rollback(None, 'req', conductor.migration, 'cancelled')
    assert arqs.deleted == [DEST_ARQ]
    assert conductor.migration.status == 'cancelled'
    assert [c[0] for c in compute_api.calls] == [
        'rollback_live_migration_at_destination'
    ]
