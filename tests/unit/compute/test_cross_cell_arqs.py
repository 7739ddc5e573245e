"""The destination's ARQ steps of a cross-cell move
(nimbus/compute/cross_cell.py, compute RPC 1.8) with the recording fakes
of test_resize_arqs: the prep binds with the device providers the super
conductor recorded, records the ARQs on the target cell's migration
before it waits, and refuses (the ARQs deleted) when the bind or the
record fails; the finish spawns with them."""

import dataclasses

from nimbus.common.objects import Instance
from nimbus.common.objects import migration as migration_obj
from nimbus.compute import arq_wait
from nimbus.compute import cross_cell
from tests.unit.compute.test_resize_arqs import Arqs
from tests.unit.compute.test_resize_arqs import Conductor
from tests.unit.compute.test_resize_arqs import DEST_ARQ
from tests.unit.compute.test_resize_arqs import FPGA
from tests.unit.compute.test_resize_arqs import SOURCE_ARQ

MAPPINGS = {'_device_profile_0': ['rp-fpga']}


class BindArqs(Arqs):
    def __init__(self, fail_wait=False):
        super().__init__()
        self.fail_wait = fail_wait
        self.selections = []
        self.waited = []

    def bind(self, ctxt, migration, selection, host):
        self.selections.append((selection, host))
        return [DEST_ARQ]

    def wait(self, ctxt, uuid, arqs):
        self.waited.append(list(arqs))
        if self.fail_wait:
            self.deleted.extend(arqs)  # as arq_wait.wait_bound
            raise arq_wait.AcceleratorBindFailed('failed to bind')


class Driver:
    def __init__(self):
        self.spawned = []

    def prep_resize(self, uuid, flavor):
        pass

    def list_instances(self):
        return []

    def spawn(self, instance, allocations, accel_info=None, power_on=True):
        self.spawned.append(accel_info)


class LostConductor(Conductor):
    def move_step(self, *args):
        return None


def _steps(arqs, conductor=None, flavor=FPGA):
    conductor = conductor or Conductor()
    conductor.migration = migration_obj.Migration(
        uuid='mig',
        instance_uuid='inst',
        migration_type='resize',
        status='pre-migrating',
        source_compute='src',
        dest_compute='dest',
        dest_node='dest-node',
        new_flavor=flavor,
        cross_cell_move=True,
        details={
            'source_accel_uuids': [SOURCE_ARQ],
            'dest_device_mappings': MAPPINGS,
        },
    )
    driver = Driver()
    steps = cross_cell.CrossCellSteps('dest', driver, arqs, conductor)
    return steps, conductor, driver


def test_prep_binds_on_the_recorded_providers_and_records_before_waiting():
    arqs = BindArqs()
    steps, conductor, _ = _steps(arqs)
    answer = steps.prep_at_dest(None, conductor.migration)
    assert answer == {'ok': True, 'accel_uuids': [DEST_ARQ]}
    ((selection, host),) = arqs.selections
    assert host == 'dest'
    assert selection.allocation_request == {'mappings': MAPPINGS}
    # Recorded on the (target cell's) migration, which stays
    # pre-migrating, then awaited.
    ((status, updates),) = conductor.steps
    assert (status, updates) == ('pre-migrating', {})
    assert conductor.migration.details['dest_accel_uuids'] == [DEST_ARQ]
    assert arqs.waited == [[DEST_ARQ]]
    assert arqs.deleted == []


def test_prep_without_a_device_profile_binds_nothing():
    arqs = BindArqs()
    steps, conductor, _ = _steps(arqs, flavor={'flavorid': '1'})
    assert steps.prep_at_dest(None, conductor.migration) == {'ok': True}
    assert arqs.selections == [] and conductor.steps == []


def test_a_failed_bind_refuses_the_prep_and_deletes_the_arqs():
    arqs = BindArqs(fail_wait=True)
    steps, conductor, _ = _steps(arqs)
    answer = steps.prep_at_dest(None, conductor.migration)
    assert answer['ok'] is False and 'failed to bind' in answer['error']
    assert arqs.deleted == [DEST_ARQ]


def test_a_move_undone_meanwhile_refuses_the_prep_and_deletes_the_arqs():
    arqs = BindArqs()
    steps, conductor, _ = _steps(arqs, conductor=LostConductor())
    answer = steps.prep_at_dest(None, conductor.migration)
    assert answer['ok'] is False and 'changed meanwhile' in answer['error']
    assert arqs.deleted == [DEST_ARQ]
    assert arqs.waited == []


def test_finish_spawns_with_the_destination_arqs():
    arqs = BindArqs()
    steps, conductor, driver = _steps(arqs)
    migration = dataclasses.replace(
        conductor.migration,
        details=dict(conductor.migration.details, dest_accel_uuids=[DEST_ARQ]),
    )
    answer = steps.finish_at_dest(None, migration, Instance(uuid='inst'))
    assert answer['ok'] is True
    assert driver.spawned == [[{'uuid': DEST_ARQ}]]
