"""The accelerator drivers: stevedore loading, deterministic uuids, the
fake drivers' options and their slow and failing programming."""

import json
import threading

import pytest

from nimbus.accelerator import drivers
from nimbus.accelerator.drivers import base
from nimbus.accelerator.drivers import fake
from nimbus.common import config


def _conf(**groups):
    return config.build_conf([], overrides=groups)


def _arq(name):
    return {'uuid': name, 'instance_uuid': 'i-' + name}


def test_enabled_drivers_load_by_entry_point_in_their_order():
    conf = _conf()
    assert conf.accelerator_agent.enabled_drivers == ['fake_fpga', 'fake_gpu']
    loaded = drivers.load(conf, 'h1', ['fake_gpu', 'fake_fpga'])
    assert [name for name, _ in loaded] == ['fake_gpu', 'fake_fpga']
    assert isinstance(loaded[0][1], fake.FakeGPUDriver)
    assert isinstance(loaded[1][1], fake.FakeFPGADriver)
    assert loaded[0][1].host == 'h1'
    assert (loaded[0][1].resource_class, loaded[1][1].resource_class) == (
        'PGPU',
        'FPGA',
    )


def test_an_unknown_driver_is_named():
    with pytest.raises(drivers.DriverNotFound, match='fake_tpu'):
        drivers.load(_conf(), 'h1', ['fake_fpga', 'fake_tpu'])


def test_devices_follow_the_options():
    conf = _conf(
        fake_fpga={
            'count': 3,
            'vendor': '10ee',
            'product': '5000',
            'num_accelerators': 2,
        }
    )
    devices = drivers.load(conf, 'h1', ['fake_fpga'])[0][1].discover()
    assert len(devices) == 3
    for index, device in enumerate(devices):
        assert device['type'] == 'FPGA'
        assert device['vendor'] == '10ee'
        assert device['hostname'] == 'h1'
        assert device['driver_name'] == 'fake_fpga'
        assert json.loads(device['std_board_info'])['product_id'] == '5000'
        [deployable] = device['deployables']
        assert deployable['name'] == 'h1_fake_fpga_%d' % index
        assert deployable['num_accelerators'] == 2
        assert deployable['driver_name'] == 'fake_fpga'
        handles = deployable['attach_handles']
        assert len(handles) == 2
        assert {h['attach_type'] for h in handles} == {'PCI'}
        assert not any(h['in_use'] for h in handles)
        assert [json.loads(h['attach_info'])['function'] for h in handles] == [
            '0',
            '1',
        ]
    # Distinct PCI addresses for distinct devices.
    addresses = {
        h['attach_info']
        for d in devices
        for h in d['deployables'][0]['attach_handles']
    }
    assert len(addresses) == 6


def _uuids(devices):
    found = []
    for device in devices:
        found.append(device['uuid'])
        for deployable in device['deployables']:
            found += [deployable['uuid'], deployable['rp_uuid']]
            found += [h['uuid'] for h in deployable['attach_handles']]
    return found


def test_uuids_are_derived_from_host_driver_and_index():
    conf = _conf(fake_gpu={'count': 2, 'num_accelerators': 2})
    first = drivers.load(conf, 'h1', ['fake_gpu'])[0][1].discover()
    again = drivers.load(
        _conf(fake_gpu={'count': 2, 'num_accelerators': 2}), 'h1', ['fake_gpu']
    )[0][1].discover()
    other = drivers.load(conf, 'h2', ['fake_gpu'])[0][1].discover()
    assert _uuids(first) == _uuids(again)
    assert len(set(_uuids(first))) == len(_uuids(first))
    assert not set(_uuids(first)) & set(_uuids(other))
    for index, device in enumerate(first):
        assert device['uuid'] == base.device_uuid('h1', 'fake_gpu', index)
        assert device['deployables'][0]['rp_uuid'] == base.provider_uuid(
            'h1', device['uuid']
        )


def test_vendor_and_product_traits():
    conf = _conf(fake_fpga={'vendor': 'abcd', 'product': '0x0B30'})
    loaded = dict(drivers.load(conf, 'h1', ['fake_fpga', 'fake_gpu']))
    fpga = loaded['fake_fpga']
    gpu = loaded['fake_gpu']
    assert gpu.traits(gpu.discover()[0]) == {
        'CUSTOM_GPU_NVIDIA',
        'CUSTOM_GPU_PRODUCT_ID_1EB8',
    }
    assert fpga.traits(fpga.discover()[0]) == {
        'CUSTOM_FPGA_VENDOR_ID_ABCD',
        'CUSTOM_FPGA_PRODUCT_ID_0B30',
    }


def _handle(driver, index=0, function=0):
    device = driver.discover()[index]
    return device, device['deployables'][0]['attach_handles'][function]


def test_programming_holds_a_handle_for_one_arq_until_released():
    driver = fake.FakeGPUDriver(_conf(), 'h1')
    device, handle = _handle(driver)
    driver.program(device, handle, _arq('a1'))
    driver.program(device, handle, _arq('a1'))  # again: still fine
    with pytest.raises(base.ProgramError, match='programmed for ARQ a1'):
        driver.program(device, handle, _arq('a2'))
    driver.release(device, handle, _arq('a2'))  # not its holder
    assert driver.programmed == {handle['uuid']: 'a1'}
    driver.release(device, handle, _arq('a1'))
    driver.program(device, handle, _arq('a2'))
    assert driver.programmed == {handle['uuid']: 'a2'}


def test_fail_program_makes_programming_fail_with_a_reason():
    driver = fake.FakeFPGADriver(_conf(fake_fpga={'fail_program': True}), 'h1')
    device, handle = _handle(driver)
    with pytest.raises(base.ProgramError, match='fake-arria10 refused'):
        driver.program(device, handle, _arq('a1'))
    assert driver.programmed == {}


def test_slow_programming_waits_and_halt_abandons_it():
    driver = fake.FakeGPUDriver(_conf(fake_gpu={'program_seconds': 60}), 'h1')
    device, handle = _handle(driver)
    outcome = []

    def program():
        try:
            driver.program(device, handle, _arq('a1'))
            outcome.append('programmed')
        except base.ProgramError as exc:
            outcome.append(str(exc))

    thread = threading.Thread(target=program)
    thread.start()
    thread.join(0.5)
    assert thread.is_alive() and outcome == []  # still programming
    driver.halt()
    thread.join(10)
    assert outcome == ['the agent is stopping']
    assert driver.programmed == {}


def test_control_file_holds_then_fails_chosen_hosts(tmp_path):
    control = tmp_path / 'control.json'
    control.write_text(json.dumps({'hold': True}))
    conf = _conf(fake_fpga={'control_file': str(control)})
    bad = fake.FakeFPGADriver(conf, 'h1')
    good = fake.FakeFPGADriver(conf, 'h2')
    outcome = {}

    def program(driver, name):
        device, handle = _handle(driver)
        try:
            driver.program(device, handle, _arq(name))
            outcome[name] = 'programmed'
        except base.ProgramError as exc:
            outcome[name] = str(exc)

    threads = [
        threading.Thread(target=program, args=(bad, 'a1')),
        threading.Thread(target=program, args=(good, 'a2')),
    ]
    for thread in threads:
        thread.start()
    threads[0].join(0.5)
    assert outcome == {}  # both held
    control.write_text(json.dumps({'fail_hosts': ['h1']}))
    for thread in threads:
        thread.join(10)
    assert outcome['a2'] == 'programmed'
    assert (
        'on h1 refused the image (control file control.json)'
        in (outcome['a1'])
    )
    assert bad.programmed == {}


def test_control_file_fail_everywhere_and_unreadable_is_empty(tmp_path):
    control = tmp_path / 'control.json'
    conf = _conf(fake_gpu={'control_file': str(control)})
    driver = fake.FakeGPUDriver(conf, 'h1')
    device, handle = _handle(driver)
    driver.program(device, handle, _arq('a1'))  # no file: programs
    driver.release(device, handle, _arq('a1'))
    control.write_text('{not json')
    driver.program(device, handle, _arq('a1'))
    driver.release(device, handle, _arq('a1'))
    control.write_text(json.dumps({'fail': True}))
    with pytest.raises(base.ProgramError, match='control file'):
        driver.program(device, handle, _arq('a2'))


def test_halt_ends_a_held_programming(tmp_path):
    control = tmp_path / 'control.json'
    control.write_text(json.dumps({'hold': True}))
    driver = fake.FakeFPGADriver(
        _conf(fake_fpga={'control_file': str(control)}), 'h1'
    )
    device, handle = _handle(driver)
    outcome = []

    def program():
        try:
            driver.program(device, handle, _arq('a1'))
        except base.ProgramError as exc:
            outcome.append(str(exc))

    thread = threading.Thread(target=program)
    thread.start()
    thread.join(0.3)
    driver.halt()
    thread.join(10)
    assert outcome == ['the agent is stopping']


def test_a_control_file_caught_mid_write_keeps_holding(tmp_path, monkeypatch):
    """Between truncating and writing the file a reader sees nothing that
    parses: that is not an empty control file, or a held programming would
    go ahead (stop 19's CI failure of the test above)."""
    control = tmp_path / 'control.json'
    control.write_text(json.dumps({'hold': True}))
    driver = fake.FakeFPGADriver(
        _conf(fake_fpga={'control_file': str(control)}), 'h1'
    )
    device, handle = _handle(driver)
    outcome = []

    def program():
        try:
            driver.program(device, handle, _arq('a1'))
            outcome.append('programmed')
        except base.ProgramError as exc:
            outcome.append(str(exc))

    thread = threading.Thread(target=program)
    thread.start()
    thread.join(0.3)
    control.write_text('')  # truncated, not yet written
    thread.join(0.5)
    assert outcome == []
    control.write_text(json.dumps({'fail_hosts': ['h1']}))
    thread.join(10)
    assert outcome and 'refused the image' in outcome[0]
