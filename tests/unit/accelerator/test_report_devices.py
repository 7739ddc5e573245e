"""report_devices: over real RPC (the in-process oslo.messaging driver),
replacing a host's device set idempotently and keeping what an ARQ holds.
"""

import copy

import pytest

from nimbus.accelerator import manager
from nimbus.accelerator import rpcapi
from nimbus.accelerator.objects import arq as arq_obj
from nimbus.accelerator.objects import device as device_obj
from nimbus.common import config
from nimbus.common import context
from nimbus.common import rpc
from nimbus.common import service
from nimbus.messaging_internals import inproc
from tests.unit.accelerator import helpers

HOST = 'compute1'


@pytest.fixture
def env(tmp_path):
    adb = helpers.new_db(tmp_path)
    conf = config.build_conf(
        [],
        overrides={
            'DEFAULT': {'transport_url': 'inproc:///accel-%s' % tmp_path.name}
        },
    )
    transport = rpc.get_transport(conf)
    server = service.RPCService(
        transport,
        rpcapi.TOPIC,
        'accel-test',
        [manager.AcceleratorManager(adb)],
        version=rpcapi.VERSION,
    ).start()
    api = rpcapi.AcceleratorAPI(transport, conf)
    yield adb, api, context.RequestContext()
    server.stop()
    rpc.cleanup_transports(conf)
    inproc.reset_buses()


def _snapshot(adb):
    return (
        device_obj.list_devices(adb),
        device_obj.list_deployables(adb),
        device_obj.handles_of_host(adb, HOST),
    )


def test_report_records_devices(env):
    adb, api, ctxt = env
    devices = [helpers.fpga(HOST, 0, handles=2), helpers.fpga(HOST, 1)]
    assert api.report_devices(ctxt, HOST, devices) == {'devices': 2}
    recorded = device_obj.list_devices(adb)
    assert sorted(d['uuid'] for d in recorded) == sorted(
        d['uuid'] for d in devices
    )
    assert all(d['hostname'] == HOST and d['type'] == 'FPGA' for d in recorded)
    assert len(device_obj.handles_of_host(adb, HOST)) == 3


def test_the_same_report_twice_changes_nothing(env):
    adb, api, ctxt = env
    devices = [helpers.fpga(HOST, 0, handles=2), helpers.fpga(HOST, 1)]
    api.report_devices(ctxt, HOST, devices)
    before = _snapshot(adb)
    assert api.report_devices(ctxt, HOST, copy.deepcopy(devices)) == {
        'devices': 2
    }
    assert _snapshot(adb) == before


def test_a_changed_field_is_updated_in_place(env):
    adb, api, ctxt = env
    device = helpers.fpga(HOST, 0)
    api.report_devices(ctxt, HOST, [device])
    device['model'] = 'fake-fpga-v2'
    api.report_devices(ctxt, HOST, [device])
    [recorded] = device_obj.list_devices(adb)
    assert recorded['model'] == 'fake-fpga-v2'
    assert recorded['updated_at'] is not None


def test_devices_missing_from_a_report_are_removed(env):
    adb, api, ctxt = env
    api.report_devices(
        ctxt, HOST, [helpers.fpga(HOST, 0), helpers.fpga(HOST, 1)]
    )
    api.report_devices(ctxt, HOST, [helpers.fpga(HOST, 1)])
    assert [d['uuid'] for d in device_obj.list_devices(adb)] == [
        helpers.fpga(HOST, 1)['uuid']
    ]
    assert len(device_obj.list_deployables(adb)) == 1
    assert len(device_obj.handles_of_host(adb, HOST)) == 1


def test_other_hosts_are_untouched(env):
    adb, api, ctxt = env
    api.report_devices(ctxt, HOST, [helpers.fpga(HOST, 0)])
    api.report_devices(ctxt, 'compute2', [helpers.fpga('compute2', 0)])
    api.report_devices(ctxt, HOST, [])
    assert [d['hostname'] for d in device_obj.list_devices(adb)] == [
        'compute2'
    ]


def test_a_device_whose_handle_is_in_use_is_kept(env):
    adb, api, ctxt = env
    device = helpers.fpga(HOST, 0)
    api.report_devices(ctxt, HOST, [device])
    rp_uuid = device['deployables'][0]['rp_uuid']
    arq = arq_obj.create_for_profile(
        adb, {'name': 'p', 'groups': [{'resources:FPGA': 1}]}
    )[0]
    arq_obj.start_binds(
        adb,
        {
            arq['uuid']: {
                'hostname': HOST,
                'device_rp_uuid': rp_uuid,
                'instance_uuid': '6a9d8e39-3d1f-4d5c-9a55-1f4b3c2d1e0f',
            }
        },
    )
    assert arq_obj.claim_handle(adb, arq_obj.get(adb, arq['uuid']))
    api.report_devices(ctxt, HOST, [])
    assert [d['uuid'] for d in device_obj.list_devices(adb)] == [
        device['uuid']
    ]
    # Once the ARQ lets go, the next report removes it.
    arq_obj.delete(adb, uuids=[arq['uuid']])
    api.report_devices(ctxt, HOST, [])
    assert device_obj.list_devices(adb) == []


def test_the_agent_never_overrides_in_use(env):
    adb, api, ctxt = env
    device = helpers.fpga(HOST, 0)
    api.report_devices(ctxt, HOST, [device])
    arq = arq_obj.create_for_profile(
        adb, {'name': 'p', 'groups': [{'resources:FPGA': 1}]}
    )[0]
    arq_obj.start_binds(
        adb,
        {
            arq['uuid']: {
                'hostname': HOST,
                'device_rp_uuid': device['deployables'][0]['rp_uuid'],
                'instance_uuid': '6a9d8e39-3d1f-4d5c-9a55-1f4b3c2d1e0f',
            }
        },
    )
    arq_obj.claim_handle(adb, arq_obj.get(adb, arq['uuid']))
    api.report_devices(ctxt, HOST, [device])  # reports in_use: false
    [handle] = device_obj.handles_of_host(adb, HOST).values()
    assert handle['in_use'] and handle['arq_uuid'] == arq['uuid']


@pytest.mark.parametrize(
    'devices',
    [
        [{'type': 'FPGA'}],
        [{'uuid': 'x', 'type': 'NPU'}],
        [{'uuid': 'x', 'type': 'GPU', 'deployables': [{'uuid': 'd'}]}],
        [
            {
                'uuid': 'x',
                'type': 'GPU',
                'deployables': [
                    {
                        'uuid': 'd',
                        'num_accelerators': 1,
                        'attach_handles': [
                            {'uuid': 'h', 'attach_type': 'PCI'}
                        ],
                    }
                ],
            }
        ],
    ],
)
def test_malformed_reports_are_refused(env, devices):
    adb, api, ctxt = env
    with pytest.raises(rpc.InvalidMessage, match='report_devices'):
        api.report_devices(ctxt, HOST, devices)
    assert device_obj.list_devices(adb) == []


def _rows(adb):
    """Every device, deployable and handle row, without ids and times."""
    skip = {'id', 'device_id', 'deployable_id', 'created_at', 'updated_at'}

    def strip(rows):
        return sorted(
            sorted((k, v) for k, v in dict(r).items() if k not in skip)
            for r in rows
        )

    return (
        strip(device_obj.list_devices(adb)),
        strip(device_obj.list_deployables(adb)),
        strip(
            list(device_obj.handles_of_host(adb, HOST).values())
            + list(device_obj.handles_of_host(adb, 'compute2').values())
        ),
    )


def test_a_report_of_many_hosts_records_what_their_reports_record(
    env, tmp_path
):
    """report_many: a host with recorded devices is brought to its report
    as report_devices does (a device gone removed, a field updated), a
    new host's devices are inserted; the same rows as one report per
    host."""
    adb, api, ctxt = env
    old = helpers.fpga(HOST, 0)
    api.report_devices(ctxt, HOST, [old, helpers.fpga(HOST, 1)])
    changed = dict(old, model='fake-fpga-v2')
    reports = {
        HOST: [changed],
        'compute2': [helpers.fpga('compute2', 0, handles=2)],
    }
    assert api.takes_batches()
    assert api.report_many(ctxt, copy.deepcopy(reports)) == {
        'devices': {HOST: 1, 'compute2': 1}
    }
    batched = _rows(adb)

    (tmp_path / 'again').mkdir()
    one_by_one = helpers.new_db(tmp_path / 'again')
    device_obj.report(one_by_one, HOST, [old, helpers.fpga(HOST, 1)])
    for host, devices in reports.items():
        device_obj.report(one_by_one, host, devices)
    assert batched == _rows(one_by_one)
    assert [d['model'] for d in device_obj.list_devices(adb)][0] == (
        'fake-fpga-v2'
    )


def test_a_malformed_report_of_many_hosts_is_refused(env):
    adb, api, ctxt = env
    with pytest.raises(rpc.InvalidMessage, match='report_many'):
        api.report_many(ctxt, {HOST: [{'uuid': 'x'}]})
    assert device_obj.list_devices(adb) == []
