"""The super conductor's recovery pass against a real cloud in one process:
a build request whose message was lost (never leased) or whose worker died
(an expired lease, a claim left in placement) is scheduled again and goes
ACTIVE with exactly one claim; one a live worker holds is left alone; the
safe kinds of the audit are healed; the running super conductor does it
on its own."""

import uuid as uuidlib


import pytest

from nimbus.allinone.cloud import wait_for
from nimbus.common import context
from nimbus.conductor import recovery
from nimbus.conductor import super_conductor
from nimbus import services
from tests.functional.test_audit import _allocations
from tests.functional.test_audit import _boot
from tests.functional.test_audit import lost_build_request
from tests.functional.test_audit import spec_of
from nimbus.allinone import client as client_mod

CTXT = context.get_admin_context()


def _cloud(make_cloud, **conductor):
    options = {'recovery_interval': 0, 'audit_grace': 0}
    options.update(conductor)
    cloud = make_cloud(hosts=2, overrides={'conductor': options})
    api = client_mod.ComputeClient(cloud.api_url)
    api.cloud = cloud
    api.flavor = api.create_flavor('m1.small', 2, 2048, 20)
    api.image = api.create_image('cirros')
    return api


def _claim(cloud, consumer, provider):
    response = services.placement(cloud.conf).request(
        CTXT,
        'PUT',
        '/allocations/%s' % consumer,
        json={
            'allocations': {provider: {'resources': {'VCPU': 1}}},
            'project_id': 'admin',
            'user_id': 'admin',
            'consumer_generation': None,
            'consumer_type': 'INSTANCE',
        },
    )
    assert response.status_code == 204, response.text


def _recovery(cloud):
    conf = cloud.conf
    conductor = super_conductor.SuperConductor(
        conf,
        services.api_db(conf),
        services.cell_directory(conf),
        services.scheduler_api(conf),
        services.placement(conf),
    )
    return recovery.Recovery(services.auditor(conf), conductor)


def _status(api, uuid):
    return {s['id']: s['status'] for s in api.servers()}.get(uuid)


@pytest.mark.slow
def test_lost_build_requests_are_scheduled_again(make_cloud, caplog):
    caplog.set_level('INFO', logger='nimbus.conductor')
    api = _cloud(make_cloud, build_request_timeout=60)
    cloud = api.cloud
    (template,) = _boot(api, 'template')
    spec = spec_of(cloud, template)
    (provider,) = _allocations(cloud, template)
    never_leased = lost_build_request(cloud, spec, age=600)
    dead_worker = lost_build_request(
        cloud, spec, age=600, token='dead', leased_age=120
    )
    # What the dead worker's scheduler call had claimed.
    _claim(cloud, dead_worker, provider)
    busy = lost_build_request(
        cloud, spec, age=600, token='alive', leased_age=5
    )
    young = lost_build_request(cloud, spec, age=5)

    acted = _recovery(cloud).run(CTXT)
    assert acted == {'unscheduled_build_request': 2}
    for uuid in (never_leased, dead_worker):
        wait_for(
            lambda u=uuid: _status(api, u) == 'ACTIVE' or None,
            timeout=60,
            what='%s ACTIVE' % uuid,
        )
        # Exactly one claim: the dead worker's went before the new one.
        assert len(_allocations(cloud, uuid)) == 1
    # The flavor's claim (2 VCPUs), not the dead worker's (1 VCPU).
    (claim,) = _allocations(cloud, dead_worker).values()
    assert claim['resources']['VCPU'] == 2
    for uuid in (busy, young):
        assert _status(api, uuid) == 'BUILD'
        assert _allocations(cloud, uuid) == {}
    lines = [
        r.getMessage()
        for r in caplog.records
        if 'scheduling it again' in r.getMessage()
    ]
    assert len(lines) == 2
    # Nothing left to do for them.
    assert _recovery(cloud).run(CTXT) == {}


@pytest.mark.slow
def test_the_running_super_conductor_recovers_on_its_own(make_cloud, caplog):
    caplog.set_level('INFO', logger='nimbus.conductor')
    api = _cloud(make_cloud, recovery_interval=1, build_request_timeout=60)
    cloud = api.cloud
    (template,) = _boot(api, 'template')
    spec = spec_of(cloud, template)
    (provider,) = _allocations(cloud, template)
    lost = lost_build_request(cloud, spec, age=600)
    orphan = str(uuidlib.uuid4())
    _claim(cloud, orphan, provider)
    wait_for(
        lambda: _status(api, lost) == 'ACTIVE' or None,
        timeout=60,
        what='the lost build request to be built',
    )
    wait_for(
        lambda: _allocations(cloud, orphan) == {} or None,
        timeout=60,
        what='the orphan allocation to be healed',
    )
    messages = [r.getMessage() for r in caplog.records]
    assert any(
        'healed orphan_allocation %s' % orphan in m for m in messages
    ), messages


@pytest.mark.slow
@pytest.mark.parametrize(
    'migration_type, waiting, task',
    [
        ('migration', 'pre-migrating', 'resize_prep'),
        ('live-migration', 'accepted', 'migrating'),
    ],
    ids=['cold migrate', 'live migrate'],
)
def test_a_move_left_waiting_for_its_scheduling_is_undone(
    make_cloud, migration_type, waiting, task
):
    """A super conductor killed while it scheduled a cold or live migrate:
    the migration made, the source's allocation handed to it, the
    destination claimed for the instance, and nothing ever cast to a
    compute (issue 24, section 3). Past the build request timeout the
    recovery pass undoes the move. A live migration its source has taken
    (queued on) is the source's, never a stuck move."""
    import datetime

    import sqlalchemy as sa

    from nimbus.common.clients.placement_moves import MIGRATION
    from nimbus.common.db import types as db_types
    from nimbus.db import cell_migrations
    from nimbus.db.cell import models as cell_models
    from tests.functional.test_audit import _cell
    from tests.functional.test_audit import _resources

    api = _cloud(make_cloud, build_request_timeout=60)
    cloud = api.cloud
    (uuid,) = _boot(api, 'moving')
    before = _resources(cloud, uuid)
    (source_rp,) = before
    placement = services.placement(cloud.conf)
    dest_rp = next(
        p['uuid']
        for p in placement.request(CTXT, 'GET', '/resource_providers').json()[
            'resource_providers'
        ]
        if p['uuid'] != source_rp and p['uuid'] == p['root_provider_uuid']
    )
    directory, cell1 = _cell(cloud, 'cell1')
    with directory.db(cell1).session() as session:
        migration = cell_migrations.create(
            session,
            {
                'instance_uuid': uuid,
                'migration_type': migration_type,
                'status': waiting,
                'source_compute': api.server(uuid)['OS-EXT-SRV-ATTR:host'],
            },
        )
        session.execute(
            sa.update(cell_models.Instance)
            .where(cell_models.Instance.uuid == uuid)
            .values(
                task_state=task,
                updated_at=db_types.utcnow() - datetime.timedelta(hours=1),
            )
        )
    assert placement.move_allocations(
        CTXT, uuid, migration['uuid'], target_type=MIGRATION
    )
    _claim(cloud, uuid, dest_rp)
    if migration_type == 'live-migration':
        # Running on its source: left alone however old.
        with directory.db(cell1).session() as session:
            cell_migrations.set_status(session, migration['uuid'], 'running')
        assert _recovery(cloud).run(CTXT) == {}
        with directory.db(cell1).session() as session:
            cell_migrations.set_status(session, migration['uuid'], waiting)

    assert _recovery(cloud).run(CTXT) == {'stuck_move': 1}
    server = api.server(uuid)
    assert (server['status'], server['OS-EXT-STS:task_state']) == (
        'ACTIVE',
        None,
    )
    with directory.db(cell1).session() as session:
        assert cell_migrations.get(session, migration['uuid'])['status'] == (
            'error'
        )
    # Placement as before the move: the source, once, for the instance.
    assert _resources(cloud, uuid) == before
    assert _allocations(cloud, migration['uuid']) == {}
    # Nothing left to do.
    assert _recovery(cloud).run(CTXT) == {}
