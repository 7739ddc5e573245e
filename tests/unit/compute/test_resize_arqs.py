"""The ARQs of a resize on the computes (nimbus/compute/resize.py with
recording fakes around it): the destination binds before the source lets
the guest go; a failure after that deletes the destination's ARQs;
confirm deletes only the source's, revert only the destination's."""

import dataclasses

from nimbus.common.objects import Instance
from nimbus.common.objects import migration as migration_obj
from nimbus.compute import move_arqs
from nimbus.compute import resize

SOURCE_ARQ, DEST_ARQ = 'arq-source', 'arq-dest'
FPGA = {'flavorid': '2', 'extra_specs': {'accel:device_profile': 'fpga'}}


class Conductor:
    """move_step applies the migration's status and updates."""

    def __init__(self):
        self.steps = []

    def move_step(self, ctxt, uuid, migration_uuid, statuses, status, *rest):
        _vm, _tasks, updates = rest[:3]
        migration_updates = rest[3] if len(rest) > 3 else None
        self.steps.append((status, dict(updates)))
        self.migration = dataclasses.replace(
            self.migration, status=status, **(migration_updates or {})
        )
        return Instance(uuid=uuid), self.migration

    def instance_action_event(self, ctxt, event):
        pass


class Driver:
    def __init__(self, fail=()):
        self.fail = set(fail)

    def __getattr__(self, name):
        def call(*args, **kwargs):
            if name in self.fail:
                raise RuntimeError('%s failed' % name)

        return call


class Arqs(move_arqs.MoveArqs):
    """The accelerator calls recorded; the sequence (bind, record, wait)
    is MoveArqs' own."""

    def __init__(self, fail_wait=False):
        super().__init__(None, None, None)
        self.fail_wait = fail_wait
        self.deleted = []

    def bind(self, ctxt, migration, selection, host):
        return [DEST_ARQ]

    def wait(self, ctxt, uuid, arqs):
        if self.fail_wait:
            self.deleted.extend(arqs)  # as arq_wait.wait_bound
            raise RuntimeError('bind failed')

    def attached(self, ctxt, arqs):
        return [{'uuid': a} for a in arqs]

    def delete(self, ctxt, arqs):
        self.deleted.extend(arqs)


class Recorder:
    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *args, **kw: self.calls.append((name, args))


class Selection:
    nodename = 'dest'
    compute_node_uuid = 'node-dest'


def _resizes(driver=None, arqs=None, status='pre-migrating', details=None):
    conductor = Conductor()
    conductor.migration = migration_obj.Migration(
        uuid='mig',
        instance_uuid='inst',
        migration_type='resize',
        status=status,
        source_compute='src',
        dest_compute='dest',
        new_flavor=FPGA,
        details=details or {'source_accel_uuids': [SOURCE_ARQ]},
    )
    compute_api, placement = Recorder(), Recorder()
    resizes = resize.Resizes(
        'dest', driver or Driver(), conductor, placement, compute_api, arqs
    )
    return resizes, conductor, compute_api, placement


def test_prep_binds_and_records_before_the_source_is_told():
    arqs = Arqs()
    resizes, conductor, compute_api, _ = _resizes(arqs=arqs)
    resizes.prep_resize(None, 'req', conductor.migration, Selection(), [])
    assert conductor.migration.details['dest_accel_uuids'] == [DEST_ARQ]
    assert [c[0] for c in compute_api.calls] == ['resize_instance']
    told = compute_api.calls[0][1][-1]
    assert told.details['dest_accel_uuids'] == [DEST_ARQ]
    assert arqs.deleted == []


def test_a_failed_bind_undoes_the_move_without_telling_the_source():
    arqs = Arqs(fail_wait=True)
    resizes, conductor, compute_api, placement = _resizes(arqs=arqs)
    resizes.prep_resize(None, 'req', conductor.migration, Selection(), [])
    assert compute_api.calls == []
    assert arqs.deleted == [DEST_ARQ]
    assert conductor.migration.status == 'error'
    assert [c[0] for c in placement.calls] == ['move_allocations']


def test_a_source_that_fails_deletes_the_destination_arqs():
    arqs = Arqs()
    details = {
        'source_accel_uuids': [SOURCE_ARQ],
        'dest_accel_uuids': [DEST_ARQ],
    }
    resizes, conductor, _, _ = _resizes(
        Driver(fail={'power_off'}), arqs, details=details
    )
    resizes.resize_instance(None, 'req', conductor.migration)
    assert arqs.deleted == [DEST_ARQ]
    assert conductor.migration.status == 'error'


def test_a_failed_finish_deletes_the_destination_arqs():
    arqs = Arqs()
    details = {
        'source_accel_uuids': [SOURCE_ARQ],
        'dest_accel_uuids': [DEST_ARQ],
    }
    resizes, conductor, _, _ = _resizes(
        Driver(fail={'spawn'}), arqs, 'post-migrating', details
    )
    resizes.finish_resize(None, 'req', conductor.migration)
    assert arqs.deleted == [DEST_ARQ]
    assert conductor.migration.status == 'error'


def test_finish_gives_the_instance_the_destination_arqs():
    details = {
        'source_accel_uuids': [SOURCE_ARQ],
        'dest_accel_uuids': [DEST_ARQ],
    }
    resizes, conductor, _, _ = _resizes(
        arqs=Arqs(), status='post-migrating', details=details
    )
    resizes.finish_resize(None, 'req', conductor.migration)
    assert conductor.steps[-1][1]['accel_uuids'] == [DEST_ARQ]
    assert conductor.migration.status == 'finished'


def test_confirm_deletes_the_source_arqs_and_revert_the_destination():
    details = {
        'source_accel_uuids': [SOURCE_ARQ],
        'dest_accel_uuids': [DEST_ARQ],
    }
    arqs = Arqs()
    resizes, conductor, _, _ = _resizes(
        arqs=arqs, status='confirming', details=details
    )
    resizes.confirm_resize(None, 'req', conductor.migration)
    assert arqs.deleted == [SOURCE_ARQ]
    arqs = Arqs()
    resizes, conductor, compute_api, _ = _resizes(
        arqs=arqs, status='reverting', details=details
    )
    resizes.revert_resize(None, 'req', conductor.migration)
    assert arqs.deleted == [DEST_ARQ]
    assert [c[0] for c in compute_api.calls] == ['finish_revert_resize']
    resizes.finish_revert_resize(None, 'req', conductor.migration)
    assert conductor.steps[-1][1]['accel_uuids'] == [SOURCE_ARQ]
