"""What the functional tests of moving a server with a device profile
share (same-cell resize and migrate, live migration, cross-cell moves):
an in-process cloud with the accelerator service and its fake FPGA
driver, the ``fpga`` device profile and two flavors that ask for it, and
the end-state checks on where the server's ARQs and allocations are."""

import json

import sqlalchemy as sa

from nimbus.common.db import get_database
from nimbus.db.cell import models as cell_models
from tests.functional.test_shelve_evacuate import _accel

PROFILE = 'fpga'


def fpga_cloud(make_cloud, tmp_path, api_class, overrides=None, **cloud):
    """``api_class`` over a cloud (``make_cloud``'s ``cloud`` keywords)
    with the accelerator service, whose fake FPGA driver reads
    ``api.control``; ``api.flavor`` (m1.fpga) and ``api.fpga_big``
    (m1.fpga-big) ask for the ``fpga`` profile (one FPGA)."""
    control = tmp_path / 'fpga-control.json'
    control.write_text('{}')
    overrides = dict(overrides or {})
    overrides['fake_fpga'] = {'control_file': str(control)}
    api = api_class(
        make_cloud(accelerators=True, overrides=overrides, **cloud)
    )
    api.control = control
    _accel(
        api,
        'POST',
        '/device_profiles',
        [{'name': PROFILE, 'groups': [{'resources:FPGA': '1'}]}],
    )
    specs = {'accel:device_profile': PROFILE}
    api.flavor = api.admin.create_flavor('m1.fpga', 1, 512, 1, specs)
    api.fpga_big = api.admin.create_flavor('m1.fpga-big', 2, 1024, 1, specs)
    return api


def booted(api):
    """A server of ``api.flavor`` booted with its one ARQ bound: its
    uuid, host and ARQ."""
    uuid = api.boot()
    host = api.show(uuid)['OS-EXT-SRV-ATTR:host']
    (arq,) = settled(api, uuid)
    return uuid, host, arq


def fail_binds_elsewhere(api, host):
    """The fake FPGA driver fails the binds on the one host that is not
    ``host`` (a two-host cloud); that host."""
    (other,) = [h for h in api.cloud.host_names() if h != host]
    api.control.write_text(json.dumps({'fail_hosts': [other]}))
    return other


def by_host(api, consumer):
    """{host: {resource class: amount}} of a consumer, the device
    providers (``<host>_fake_fpga_<n>``) counted with their host."""
    out = {}
    for name, resources in api.hosts_of(consumer).items():
        host = name.split('_')[0]
        for rc, amount in resources.items():
            out.setdefault(host, {})[rc] = amount
    return out


def accel_uuids(api, cell, uuid):
    """The ARQ references of the instance's record in ``cell`` (hidden or
    not), or None without one."""
    with get_database(api.cloud.db_urls[cell]).session() as session:
        row = session.execute(
            sa.select(cell_models.Instance).where(
                cell_models.Instance.uuid == uuid,
                cell_models.Instance.deleted.is_(False),
            )
        ).scalar_one_or_none()
        return None if row is None else sorted(row.accel_uuids or [])


def settled(api, uuid, cell='cell1'):
    """Every ARQ the accelerator service holds is bound to this server on
    its current host and is the one its record in ``cell`` (the cell it
    is mapped to) names and its guest was spawned with; their uuids."""
    host = api.show(uuid)['OS-EXT-SRV-ATTR:host']
    every = _accel(api, 'GET', '/accelerator_requests')['arqs']
    held = {
        a['uuid']: (a['state'], a['instance_uuid'], a['hostname'])
        for a in every
    }
    assert held and set(held.values()) == {('Bound', uuid, host)}, held
    assert accel_uuids(api, cell, uuid) == sorted(held)
    assert api.cloud.computes[host].driver.attached_arqs(uuid) == sorted(held)
    return sorted(held)
