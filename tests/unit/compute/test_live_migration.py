"""The simulated copy of a live migration (its progress columns, abort
and force complete) and the RPC caps of the live migration messages."""

import threading

import oslo_messaging as messaging
import pytest

from nimbus.common import config
from nimbus.common import context
from nimbus.common import rpc
from nimbus.common.objects import migration as migration_obj
from nimbus.compute import live_copy
from nimbus.compute import rpcapi as compute_rpcapi
from nimbus.conductor import rpcapi as conductor_rpcapi

MIB = 1024 * 1024


def test_totals_and_progress():
    copy = live_copy.Copy(0, 0.1)
    flavor = {'memory_mb': 512, 'root_gb': 2}
    assert copy.totals(flavor, True) == (512 * MIB, 2 * 1024**3)
    assert copy.totals(flavor, False) == (512 * MIB, 0)
    half = live_copy.progress(512 * MIB, 0, 0.5)
    assert half == {
        'memory_total': 512 * MIB,
        'memory_processed': 256 * MIB,
        'memory_remaining': 256 * MIB,
        'disk_total': 0,
        'disk_processed': 0,
        'disk_remaining': 0,
    }


def test_the_copy_reports_each_step_to_the_end():
    copy = live_copy.Copy(0.04, 0.01)
    seen = []
    copy.run(live_copy.Job(), 400, 40, seen.append)
    assert len(seen) == copy.steps() == 4
    assert [s['memory_processed'] for s in seen] == [100, 200, 300, 400]
    assert seen[-1]['memory_remaining'] == seen[-1]['disk_remaining'] == 0


def test_abort_and_force_complete_end_the_copy():
    copy = live_copy.Copy(3600, 1)
    job = live_copy.Job()
    job.abort()
    with pytest.raises(live_copy.Aborted):
        copy.run(job, 400, 0, lambda columns: None)
    job = live_copy.Job()
    seen = []
    threading.Timer(0.01, job.force).start()
    copy.run(job, 400, 0, seen.append)  # returns once forced
    assert seen[-1]['memory_processed'] == 400


@pytest.mark.parametrize(
    'requested, block', [('auto', True), (None, True), (False, False)]
)
def test_auto_is_a_block_migration_on_the_fake_driver(requested, block):
    assert live_copy.resolve_block_migration(requested) is block


def _migration():
    return migration_obj.Migration(
        uuid='m',
        instance_uuid='i',
        migration_type='live-migration',
        status='accepted',
    )


@pytest.mark.parametrize(
    'cap, takes', [(None, True), ('1.5', True), ('1.4', False)]
)
def test_compute_cap_below_1_5_refuses_live_migrations(cap, takes):
    conf = config.build_conf(
        [], overrides={'upgrade_levels': {'compute': cap}}
    )
    transport = rpc.get_transport(conf, 'inproc:///live-cap-%s' % cap)
    try:
        api = compute_rpcapi.ComputeAPI(transport, conf)
        assert api.takes_live_migrations() is takes
        if not takes:
            with pytest.raises(messaging.RPCVersionCapError):
                api.live_migration(
                    context.get_admin_context(),
                    'h1',
                    'i',
                    'req',
                    _migration(),
                    {},
                )
    finally:
        rpc.cleanup_transports(conf)


def test_conductor_cap_below_1_8_refuses_the_live_calls():
    conf = config.build_conf(
        [], overrides={'upgrade_levels': {'conductor': '1.7'}}
    )
    transport = rpc.get_transport(conf, 'inproc:///live-cap-conductor')
    try:
        api = conductor_rpcapi.CellConductorAPI(transport, conf)
        with pytest.raises(messaging.RPCVersionCapError):
            api.live_migrations_from(context.get_admin_context(), 'h1')
    finally:
        rpc.cleanup_transports(conf)
