"""The consistency audit against a real cloud in one process: each kind of
disagreement is made the way a fault would leave it, the audit finds it,
``heal`` repairs the safe kinds and touches no healthy record."""

import datetime
import http.server
import json
import threading
import urllib.parse
import uuid as uuidlib

import pytest
import sqlalchemy as sa

from nimbus.allinone import client as client_mod
from nimbus.allinone.cloud import wait_for
from nimbus.common import context
from nimbus.common.clients import accelerator as accel_client
from nimbus.common.db import types as db_types
from nimbus.conductor import audit
from nimbus.db import cell_migrations
from nimbus.db.api import models as api_models
from nimbus.db.cell import models as cell_models
from nimbus import services

CTXT = context.get_admin_context()


class ArqStore:
    """The ARQ side of a Cyborg-shaped accelerator API over real HTTP:
    ``GET /v2/accelerator_requests`` answers ``{"arqs": [...]}`` and
    ``DELETE ...?arqs=a,b`` deletes. It stands in for the accelerator
    service, which another branch builds."""

    def __init__(self):
        self.arqs = {}
        store = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self, status, body=None):
                data = json.dumps(body).encode() if body is not None else b''
                self.send_response(status)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._answer(200, {'arqs': list(store.arqs.values())})

            def do_DELETE(self):
                query = urllib.parse.parse_qs(
                    urllib.parse.urlsplit(self.path).query
                )
                for arq in ','.join(query.get('arqs', [])).split(','):
                    store.arqs.pop(arq, None)
                self._answer(204)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(
            ('127.0.0.1', 0), Handler
        )
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.endpoint = (
            'http://127.0.0.1:%d/v2' % self.server.server_address[1]
        )

    def add(self, instance_uuid):
        arq = {
            'uuid': str(uuidlib.uuid4()),
            'state': 'Bound',
            'device_profile_name': 'gpu',
            'device_profile_group_id': 0,
            'hostname': 'host-1',
            'instance_uuid': instance_uuid,
        }
        self.arqs[arq['uuid']] = arq
        return arq['uuid']

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def admin(make_cloud):
    return admin_cloud(make_cloud)


def admin_cloud(make_cloud):
    """The functional tests' admin cloud (conftest), without the super
    conductor's recovery pass and the cell conductors' build check: these
    tests make disagreements for the audit to find, which either would
    repair under them (on a slow machine the build check's 60 s pass
    failed the made stuck instance between two audits)."""
    cloud = make_cloud(
        overrides={
            'conductor': {'recovery_interval': 0, 'build_check_interval': 0}
        }
    )
    api = client_mod.ComputeClient(cloud.api_url)
    api.cloud = cloud
    api.flavor = api.create_flavor('m1.small', 2, 2048, 20)
    api.image = api.create_image('cirros')
    return api


@pytest.fixture
def arq_store():
    store = ArqStore()
    yield store
    store.stop()


def _boot(api, name, count=1):
    api.create_server(
        name,
        api.flavor['id'],
        api.image['id'],
        min_count=count,
        max_count=count,
    )

    def done():
        servers = [s for s in api.servers() if s['name'].startswith(name)]
        if len(servers) == count and all(
            s['status'] in ('ACTIVE', 'ERROR') for s in servers
        ):
            return servers
        return None

    return [s['id'] for s in wait_for(done, timeout=60, what=name)]


def _cell(cloud, name):
    directory = services.cell_directory(cloud.conf)
    return directory, next(c for c in directory.cells() if c.name == name)


def _allocations(cloud, consumer):
    return services.placement(cloud.conf).get_allocations_for_consumer(
        CTXT, consumer
    )['allocations']


def _resources(cloud, consumer):
    """Resources per provider (a provider's generation moves when another
    consumer's allocation on it goes)."""
    return {
        rp: a['resources'] for rp, a in _allocations(cloud, consumer).items()
    }


def _auditor(cloud, arq_store):
    checker = services.auditor(
        cloud.conf,
        accel_client.AcceleratorClient(arq_store.endpoint, retries=0),
    )
    checker.grace = 0
    return checker


def _node_uuid(cloud, uuid):
    directory, cell1 = _cell(cloud, 'cell1')
    with directory.db(cell1).session() as session:
        return session.execute(
            sa.select(cell_models.Instance.compute_node_uuid).where(
                cell_models.Instance.uuid == uuid
            )
        ).scalar()


def _found(report):
    return {(d.kind, d.uuid) for d in report.disagreements}


def _insert_instance(
    db, uuid, vm_state, age_s=0, task_state=None, deleted=False
):
    when = db_types.utcnow() - datetime.timedelta(seconds=age_s)
    with db.session() as session:
        session.add(
            cell_models.Instance(
                uuid=uuid,
                project_id='admin',
                vm_state=vm_state,
                task_state=task_state,
                flavor={},
                deleted=deleted,
                created_at=when,
                updated_at=when,
            )
        )


def _map(api_db, uuid, cell_id):
    with api_db.session() as session:
        session.add(
            api_models.InstanceMapping(
                instance_uuid=uuid, cell_id=cell_id, project_id='admin'
            )
        )


def spec_of(cloud, server):
    with services.api_db(cloud.conf).session() as session:
        return session.execute(
            sa.select(api_models.RequestSpec.spec).where(
                api_models.RequestSpec.instance_uuid == server
            )
        ).scalar()


def lost_build_request(cloud, spec, age, token=None, leased_age=None):
    """A build request as the API writes it, ``age`` seconds old, that no
    super conductor finished."""
    uuid = str(uuidlib.uuid4())
    now = db_types.utcnow()
    with services.api_db(cloud.conf).session() as session:
        session.add(
            api_models.BuildRequest(
                instance_uuid=uuid,
                project_id=spec['project_id'],
                user_id=spec['user_id'],
                instance={
                    'uuid': uuid,
                    'display_name': 'lost-' + uuid[:8],
                    'project_id': spec['project_id'],
                    'user_id': spec['user_id'],
                    'flavor': spec['flavor'],
                    'image_ref': spec['image']['id'],
                    'vm_state': 'building',
                    'task_state': 'scheduling',
                    'metadata': {},
                    'created_at': (
                        now - datetime.timedelta(seconds=age)
                    ).isoformat(),
                },
                created_at=now - datetime.timedelta(seconds=age),
                schedule_token=token,
                schedule_started_at=None
                if leased_age is None
                else now - datetime.timedelta(seconds=leased_age),
            )
        )
        session.add(
            api_models.RequestSpec(
                instance_uuid=uuid, spec=dict(spec, instance_uuids=[uuid])
            )
        )
        session.add(
            api_models.InstanceMapping(
                instance_uuid=uuid,
                cell_id=None,
                project_id=spec['project_id'],
                user_id=spec['user_id'],
            )
        )
    return uuid


def _put(placement, consumer, rp, consumer_type):
    response = placement.request(
        CTXT,
        'PUT',
        '/allocations/%s' % consumer,
        json={
            'allocations': {rp: {'resources': {'VCPU': 1}}},
            'project_id': 'admin',
            'user_id': 'admin',
            'consumer_generation': None,
            'consumer_type': consumer_type,
        },
    )
    assert response.status_code == 204, response.text


def _make_every_kind(api, arq_store):
    """Healthy servers, then one record of each kind of disagreement;
    returns ``({kind: uuid}, healthy uuids, the ARQ of a healthy one)``."""
    cloud = api.cloud
    healthy = _boot(api, 'healthy', count=2)
    victims = _boot(api, 'victim', count=6)
    placement = services.placement(cloud.conf)
    directory, cell1 = _cell(cloud, 'cell1')
    api_db = services.api_db(cloud.conf)
    made = {}

    # A consumer nobody knows, on a healthy server's provider.
    (rp,) = _allocations(cloud, healthy[0])
    made['orphan_allocation'] = str(uuidlib.uuid4())
    response = placement.request(
        CTXT,
        'PUT',
        '/allocations/%s' % made['orphan_allocation'],
        json={
            'allocations': {rp: {'resources': {'VCPU': 1}}},
            'project_id': 'admin',
            'user_id': 'admin',
            'consumer_generation': None,
            'consumer_type': 'INSTANCE',
        },
    )
    assert response.status_code == 204, response.text

    # Deleted in its cell, the allocation left behind (placement was down).
    made['deleted_instance_allocation'] = victims[0]
    with directory.db(cell1).session() as session:
        session.execute(
            sa.update(cell_models.Instance)
            .where(cell_models.Instance.uuid == victims[0])
            .values(
                vm_state='deleted', deleted=True, deleted_at=db_types.utcnow()
            )
        )

    # Failed on no host, its allocation left behind.
    made['error_instance_allocation'] = victims[3]
    with directory.db(cell1).session() as session:
        session.execute(
            sa.update(cell_models.Instance)
            .where(cell_models.Instance.uuid == victims[3])
            .values(vm_state='error', task_state=None, host=None)
        )

    # ACTIVE, its allocation gone.
    made['active_without_allocation'] = victims[1]
    placement.remove_allocations(CTXT, victims[1])

    # The build request outlived the move of the instance into its cell.
    made['stale_build_request'] = victims[2]
    with api_db.session() as session:
        session.add(
            api_models.BuildRequest(
                instance_uuid=victims[2],
                project_id='admin',
                instance={'display_name': 'victim'},
            )
        )

    # A build request nobody scheduled (its message was lost).
    made['unscheduled_build_request'] = lost_build_request(
        cloud, spec_of(cloud, healthy[0]), age=3600
    )

    # A mapping to cell1, which never got the instance.
    made['mapping_to_missing_instance'] = str(uuidlib.uuid4())
    _map(api_db, made['mapping_to_missing_instance'], cell1.id)

    # An instance of cell1 without a mapping.
    made['instance_without_mapping'] = str(uuidlib.uuid4())
    _insert_instance(
        directory.db(cell1), made['instance_without_mapping'], 'error'
    )

    # In BUILD for two hours.
    made['stuck_instance'] = str(uuidlib.uuid4())
    _insert_instance(
        directory.db(cell1),
        made['stuck_instance'],
        'building',
        age_s=7200,
        task_state='spawning',
    )
    _map(api_db, made['stuck_instance'], cell1.id)

    # Half-done moves (issue 24, section 3). A confirmed migration whose
    # consumer still holds the source's allocation.
    with directory.db(cell1).session() as session:
        migration = cell_migrations.create(
            session,
            {
                'instance_uuid': victims[4],
                'migration_type': 'resize',
                'status': 'confirmed',
                'source_compute': 'nowhere',
            },
        )
    made['ended_migration_allocation'] = migration['uuid']
    (rp4,) = _allocations(cloud, victims[4])
    _put(placement, migration['uuid'], rp4, 'MIGRATION')
    # An instance with no task that holds allocations on another host too.
    made['misplaced_allocation'] = victims[4]
    other = next(
        p['uuid']
        for p in placement.request(CTXT, 'GET', '/resource_providers').json()[
            'resource_providers'
        ]
        if p['uuid'] != rp4 and p['uuid'] == p['root_provider_uuid']
    )
    current = _resources(cloud, victims[4])
    current[other] = {'VCPU': 1, 'MEMORY_MB': 64}
    placement.replace_allocations(CTXT, victims[4], current, 'admin', 'admin')
    # A resize waiting for its scheduling for two hours.
    made['stuck_move'] = victims[5]
    with directory.db(cell1).session() as session:
        session.execute(
            sa.update(cell_models.Instance)
            .where(cell_models.Instance.uuid == victims[5])
            .values(
                task_state='resize_prep',
                updated_at=db_types.utcnow() - datetime.timedelta(hours=2),
            )
        )

    # An ARQ bound to an instance that is nowhere; a healthy one's ARQ.
    made['orphan_arq'] = arq_store.add(str(uuidlib.uuid4()))
    healthy_arq = arq_store.add(healthy[0])
    return made, healthy, healthy_arq


@pytest.mark.slow
def test_a_consistent_cloud_has_no_disagreement(admin, arq_store):
    servers = _boot(admin, 'ok', count=3)
    arq_store.add(servers[0])
    report = _auditor(admin.cloud, arq_store).run(CTXT)
    assert report.disagreements == []
    assert report.checked['instances'] == 3
    assert report.checked['consumers'] == 3
    assert report.checked['ARQs'] == 1
    assert 'no disagreement' in report.summary()


@pytest.mark.slow
def test_audit_finds_every_kind_and_heal_fixes_only_the_safe_ones(
    admin, arq_store
):
    cloud = admin.cloud
    made, healthy, healthy_arq = _make_every_kind(admin, arq_store)
    checker = _auditor(cloud, arq_store)
    healthy_allocations = {u: _resources(cloud, u) for u in healthy}

    report = checker.run(CTXT)
    assert _found(report) == {(kind, uuid) for kind, uuid in made.items()}
    assert set(made) == set(audit.KINDS)
    assert report.counts() == {kind: 1 for kind in audit.KINDS}
    assert not any(
        d.uuid in healthy or d.uuid == healthy_arq
        for d in report.disagreements
    )

    checker.heal(CTXT, report)
    healed = {d.kind for d in report.disagreements if d.healed}
    assert healed == set(audit.HEALABLE)
    # The repairs themselves.
    assert _allocations(cloud, made['orphan_allocation']) == {}
    assert _allocations(cloud, made['deleted_instance_allocation']) == {}
    with services.api_db(cloud.conf).session() as session:
        assert (
            session.execute(
                sa.select(api_models.BuildRequest).where(
                    api_models.BuildRequest.instance_uuid
                    == made['stale_build_request']
                )
            ).first()
            is None
        )
    assert made['orphan_arq'] not in arq_store.arqs
    assert _allocations(cloud, made['ended_migration_allocation']) == {}
    # The misplaced instance holds its own host's allocation, only.
    assert set(_resources(cloud, made['misplaced_allocation'])) == {
        _node_uuid(cloud, made['misplaced_allocation'])
    }
    # Healthy records are as they were.
    assert {u: _resources(cloud, u) for u in healthy} == healthy_allocations
    assert healthy_arq in arq_store.arqs
    servers = {s['id']: s['status'] for s in admin.servers()}
    assert all(servers[u] == 'ACTIVE' for u in healthy)
    assert servers[made['stale_build_request']] == 'ACTIVE'

    # A second audit reports the unsafe kinds unchanged, nothing else.
    again = checker.run(CTXT)
    assert _found(again) == {
        (kind, made[kind])
        for kind in audit.KINDS
        if kind not in audit.HEALABLE
    }


@pytest.mark.slow
def test_heal_leaves_a_consumer_that_became_known(admin, arq_store):
    """Re-checked before repair: a consumer that got a build request since
    the audit read placement keeps its allocation."""
    cloud = admin.cloud
    (server,) = _boot(admin, 'known')
    (rp,) = _allocations(cloud, server)
    consumer = str(uuidlib.uuid4())
    placement = services.placement(cloud.conf)
    assert (
        placement.request(
            CTXT,
            'PUT',
            '/allocations/%s' % consumer,
            json={
                'allocations': {rp: {'resources': {'VCPU': 1}}},
                'project_id': 'admin',
                'user_id': 'admin',
                'consumer_generation': None,
                'consumer_type': 'INSTANCE',
            },
        ).status_code
        == 204
    )
    checker = _auditor(cloud, arq_store)
    report = checker.run(CTXT)
    assert _found(report) == {('orphan_allocation', consumer)}
    with services.api_db(cloud.conf).session() as session:
        session.add(
            api_models.BuildRequest(
                instance_uuid=consumer, project_id='admin', instance={}
            )
        )
    checker.heal(CTXT, report)
    (item,) = report.disagreements
    assert not item.healed and 'no longer true' in item.heal_error
    assert _allocations(cloud, consumer) != {}


@pytest.mark.slow
def test_grace_hides_a_build_between_its_two_writes(admin, arq_store):
    cloud = admin.cloud
    (server,) = _boot(admin, 'inflight')
    with services.api_db(cloud.conf).session() as session:
        session.add(
            api_models.BuildRequest(
                instance_uuid=server, project_id='admin', instance={}
            )
        )
    checker = _auditor(cloud, arq_store)
    checker.grace = 3600
    assert checker.run(CTXT).disagreements == []
    checker.grace = 0
    assert _found(checker.run(CTXT)) == {('stale_build_request', server)}


@pytest.mark.slow
def test_the_super_conductors_periodic_audit_logs_a_summary(
    admin, arq_store, caplog
):
    cloud = admin.cloud
    made, _healthy, _arq = _make_every_kind(admin, arq_store)
    cloud.conf.set_override('audit_grace', 0, group='conductor')
    task = services.audit_task(
        cloud.conf,
        accel_client.AcceleratorClient(arq_store.endpoint, retries=0),
    )
    caplog.set_level('INFO', logger='nimbus.services')
    report = task()
    assert report.counts() == {kind: 1 for kind in audit.KINDS}
    lines = [
        r.getMessage() for r in caplog.records if r.name == 'nimbus.services'
    ]
    assert len(lines) == 1
    for kind in audit.KINDS:
        assert '%s=1' % kind in lines[0]
    # Read-only: every disagreement is still there.
    assert _allocations(cloud, made['orphan_allocation']) != {}
    assert made['orphan_arq'] in arq_store.arqs


@pytest.mark.slow
def test_the_super_conductor_runs_the_audit_every_interval(make_cloud, caplog):
    """The running cloud's super conductor, with ``audit_interval`` 1: its
    summary lines come on their own, and name a disagreement made after
    it started."""
    caplog.set_level('INFO', logger='nimbus.services')
    cloud = make_cloud(
        hosts=1,
        overrides={'conductor': {'audit_interval': 1, 'audit_grace': 0}},
    )

    def summaries():
        return [
            r.getMessage()
            for r in caplog.records
            if r.name == 'nimbus.services'
            and r.getMessage().startswith('audit:')
        ]

    wait_for(lambda: summaries() or None, timeout=30, what='an audit line')
    directory, cell1 = _cell(cloud, 'cell1')
    _map(services.api_db(cloud.conf), str(uuidlib.uuid4()), cell1.id)
    wait_for(
        lambda: (
            any(
                'mapping_to_missing_instance=1' in line for line in summaries()
            )
            or None
        ),
        timeout=30,
        what='the audit to see the mapping',
    )


@pytest.mark.slow
def test_an_unreadable_cell_database_is_an_audit_error(
    admin, arq_store, tmp_path
):
    """No half answer: a cell whose database cannot be read fails the
    audit with the cell's name (and the periodic task logs it)."""
    cloud = admin.cloud
    _boot(admin, 'fine')
    api_db = services.api_db(cloud.conf)
    with api_db.session() as session:
        session.add(
            api_models.CellMapping(
                uuid=str(uuidlib.uuid4()),
                name='cell-broken',
                transport_url='inproc:///broken',
                database_connection='sqlite:///%s'
                % (tmp_path / 'missing-dir' / 'nowhere' / 'x.sqlite'),
            )
        )
    with pytest.raises(audit.AuditError, match='cell-broken'):
        _auditor(cloud, arq_store).run(CTXT)


@pytest.mark.slow
def test_the_snapshot_reads_the_cloud_as_it_is_not_its_history(
    admin, arq_store
):
    """The recovery pass runs every minute: it reads the live instances and
    what placement, build requests and ARQs name, not the rows and
    mappings of every instance ever deleted (they grow with every boot).
    The read-only audit walks those mappings apart, a page at a time."""
    cloud = admin.cloud
    live = _boot(admin, 'live', count=2)
    gone = _boot(admin, 'gone', count=3)
    for uuid in gone:
        admin.delete('/servers/%s' % uuid)
    wait_for(
        lambda: not any(_allocations(cloud, u) for u in gone) or None,
        timeout=30,
        what='the deletes',
    )
    # An instance deleted long ago and archived from its cell, whose
    # mapping stayed behind; and an ARQ still bound to a deleted one.
    directory, cell1 = _cell(cloud, 'cell1')
    archived = str(uuidlib.uuid4())
    _map(services.api_db(cloud.conf), archived, cell1.id)
    arq = arq_store.add(gone[0])
    checker = _auditor(cloud, arq_store)

    snap = checker.gather(CTXT)
    assert set(snap.instances) == set(live) | {gone[0]}
    assert set(snap.mappings) == set(live) | {gone[0]}
    assert not snap.records(gone[0])[0].live
    assert _found_in(checker.check(snap)) == {('orphan_arq', arq)}

    report = checker.run(CTXT)
    assert _found(report) == {
        ('orphan_arq', arq),
        ('mapping_to_missing_instance', archived),
    }
    assert report.checked['mappings'] == 2 + 3 + 1
    assert report.checked['instances'] == 3


@pytest.mark.slow
def test_the_historic_walk_pages_through_every_mapping(
    admin, arq_store, monkeypatch
):
    """Pages of two: every mapping is checked once, against its cell."""
    from nimbus.db import instance_mappings

    cloud = admin.cloud
    _boot(admin, 'old', count=3)
    directory, cell1 = _cell(cloud, 'cell1')
    missing = sorted(str(uuidlib.uuid4()) for _ in range(3))
    for uuid in missing:
        _map(services.api_db(cloud.conf), uuid, cell1.id)
    real_page = instance_mappings.page
    pages = []

    def page(session, after_id=0, limit=500):
        rows = real_page(session, after_id, limit=2)
        pages.append([r[0] for r in rows])
        return rows

    monkeypatch.setattr(instance_mappings, 'page', page)
    checker = _auditor(cloud, arq_store)
    snap = checker.gather(CTXT)
    snap.mappings.clear()  # as if the snapshot had named none of them
    checked, found = checker.historic_mappings(snap)
    assert checked == 6
    assert [d.uuid for d in found] == missing
    ids = [i for p in pages for i in p]
    assert len(ids) == len(set(ids)) == 6 and pages[-1] == []


def _found_in(disagreements):
    return {(d.kind, d.uuid) for d in disagreements}
