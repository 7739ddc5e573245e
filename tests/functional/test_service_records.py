"""Every service kind records itself and shows in ``GET /os-services``:
the scheduler and the super conductor in cell0's database (as Nova's do),
the cell conductors and computes in their cell's, each under the host its
config names, up or down by its heartbeat."""

import datetime

import sqlalchemy as sa

from nimbus.allinone import client as client_mod
from nimbus.allinone.cloud import wait_for
from nimbus.common import service
from nimbus.db.cell import models as cell_models
from nimbus import services
from tests.functional.api import fixtures


def _listed(api):
    return {
        (s['binary'], s['host']): s
        for s in api.admin('GET', '/v2.1/os-services').json['services']
    }


def test_os_services_lists_every_kind(make_cloud):
    cloud = make_cloud(hosts=2, overrides={'DEFAULT': {'host': 'ctl-1'}})
    admin = client_mod.ComputeClient(cloud.api_url)
    expected = {
        ('nova-scheduler', 'ctl-1'),
        ('nova-conductor', 'ctl-1'),
        ('nova-conductor', 'aio-cell1'),
    }

    def listed():
        found = admin.get('/os-services')['services']
        up = {(s['binary'], s['host']) for s in found if s['state'] == 'up'}
        computes = {s['host'] for s in found if s['binary'] == 'nova-compute'}
        return found if expected <= up and len(computes) == 2 else None

    found = wait_for(listed, timeout=60, what='every service up')
    assert {s['binary'] for s in found} == {
        'nova-scheduler',
        'nova-conductor',
        'nova-compute',
    }
    for s in found:
        if s['binary'] != 'nova-compute':
            assert s['zone'] == 'internal', s
    # Nova's filter names find them; Nimbus's too.
    for name in ('nova-scheduler', 'nimbus-scheduler'):
        only = admin.get('/os-services?binary=%s' % name)['services']
        assert [(s['binary'], s['host']) for s in only] == [
            ('nova-scheduler', 'ctl-1')
        ]


def test_a_control_service_is_up_while_it_beats(tmp_path):
    """The heartbeat of a service of no cell (scheduler, super conductor)
    goes to cell0: up while it beats, down once it is older than
    ``service_down_time``, up again with the next beat."""
    api = fixtures.ApiFixture(tmp_path)
    beats = {
        binary: services.control_heartbeat(api.conf, binary, 'controller-1')
        for binary in (service.SCHEDULER_BINARY, service.CONDUCTOR_BINARY)
    }
    assert _listed(api) == {}
    for beat in beats.values():
        beat.func()
    listed = _listed(api)
    assert set(listed) == {
        ('nova-scheduler', 'controller-1'),
        ('nova-conductor', 'controller-1'),
    }
    assert {s['state'] for s in listed.values()} == {'up'}
    with api.cells.db(api.cell0).session() as session:
        rows = session.execute(sa.select(cell_models.Service)).scalars()
        assert {(r.binary, r.topic) for r in rows} == {
            ('nimbus-scheduler', 'scheduler'),
            ('nimbus-conductor', 'conductor'),
        }
        # The scheduler stopped beating long ago.
        session.execute(
            sa.update(cell_models.Service)
            .where(cell_models.Service.binary == 'nimbus-scheduler')
            .values(
                last_seen_up=datetime.datetime.utcnow()
                - datetime.timedelta(hours=1)
            )
        )
    listed = _listed(api)
    assert listed[('nova-scheduler', 'controller-1')]['state'] == 'down'
    assert listed[('nova-conductor', 'controller-1')]['state'] == 'up'
    beats[service.SCHEDULER_BINARY].func()
    assert _listed(api)[('nova-scheduler', 'controller-1')]['state'] == 'up'


def test_a_heartbeat_without_cell0_does_not_raise(tmp_path, caplog):
    """cell0 not mapped yet (before nimbus-manage cell map-cell0): the
    heartbeat logs a warning once and the service keeps running."""
    api = fixtures.ApiFixture(tmp_path)
    with api.api_db.session() as session:
        session.execute(
            sa.delete(fixtures.api_models.CellMapping).where(
                fixtures.api_models.CellMapping.name == 'cell0'
            )
        )
    beat = services.control_heartbeat(
        api.conf, service.SCHEDULER_BINARY, 'controller-1'
    )
    beat.func()
    beat.func()
    warnings = [r for r in caplog.records if 'heartbeat' in r.getMessage()]
    assert len(warnings) == 1


def test_the_cell_conductor_records_its_host_not_its_server_name(tmp_path):
    """What ``nimbus-conductor --cell cell1`` builds with ``[DEFAULT] host
    = cell1-conductor-1``: the record names that host (it named
    ``cell1-conductor-1-cell1``); the RPC server name names the cell."""
    api = fixtures.ApiFixture(tmp_path)
    svc = services.cell_conductor_service(
        api.conf,
        transport_url='inproc:///%s-cell1' % tmp_path.name,
        database_url=api.cell1_url,
        host='cell1-conductor-1',
        server='cell1-conductor-1-cell1',
    )
    svc.start()
    try:
        assert svc.server_name == 'cell1-conductor-1-cell1'
        listed = wait_for(
            lambda: _listed(api).get(('nova-conductor', 'cell1-conductor-1')),
            timeout=30,
            what='the heartbeat',
        )
        assert listed['state'] == 'up' and listed['zone'] == 'internal'
        assert set(_listed(api)) == {('nova-conductor', 'cell1-conductor-1')}
    finally:
        svc.stop()
