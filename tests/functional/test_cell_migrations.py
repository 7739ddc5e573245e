"""Cell schema migration 0002 (compute_nodes.stats) on SQLite, MariaDB and
PostgreSQL: a database at 0001 with a compute node in it is upgraded by
``nimbus-manage db sync`` (run as the operator runs it), keeps its row,
stores and reads stats, and downgrades back to 0001.

MariaDB and PostgreSQL come from nimbus.testing.infra: without them the
test skips with a one-line reason (fails under CI=true)."""

import os
import subprocess
import sys

from alembic import command as alembic_command
from alembic.config import Config as AlembicConfig
import pytest
import sqlalchemy as sa

from nimbus.common import db as common_db
from nimbus.common.objects import ComputeNodeRecord
from nimbus.db import cell_migrations
from nimbus.db import cell_services as node_records
from nimbus import db as nimbus_db
from nimbus.db.cell import models
from nimbus.testing import infra

MANAGE = os.path.join(os.path.dirname(sys.executable), 'nimbus-manage')


@pytest.fixture(params=['sqlite', 'mysql', 'postgresql'])
def fresh_url(request, tmp_path):
    if request.param == 'sqlite':
        yield 'sqlite:///%s' % (tmp_path / 'cell.sqlite')
        return
    url, cleanup = infra.database(request.param)
    try:
        yield url
    finally:
        common_db.dispose_all()
        cleanup()


def _alembic(url):
    config = AlembicConfig()
    config.set_main_option('script_location', nimbus_db.CELL_MIGRATIONS)
    config.attributes['nimbus_url'] = common_db.normalize_url(url)
    return config


def _version(url):
    engine = common_db.create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(
                sa.text('SELECT version_num FROM alembic_version')
            ).scalar()
    finally:
        engine.dispose()


def _columns(url, table='compute_nodes'):
    engine = common_db.create_engine(url)
    try:
        return {c['name'] for c in sa.inspect(engine).get_columns(table)}
    finally:
        engine.dispose()


def _db_sync(tmp_path, url):
    conf = tmp_path / 'nimbus.conf'
    conf.write_text('[database]\nconnection = %s\n' % url)
    result = subprocess.run(
        [MANAGE, '--config-file', str(conf), 'db', 'sync'],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


@pytest.mark.slow
def test_db_sync_upgrades_0001_to_compute_node_stats(fresh_url, tmp_path):
    common_db.sync(fresh_url, nimbus_db.CELL_MIGRATIONS, revision='0001')
    assert _version(fresh_url) == '0001'
    assert 'stats' not in _columns(fresh_url)
    # A compute node written under 0001 (no stats column yet).
    engine = common_db.create_engine(fresh_url)
    try:
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    'INSERT INTO compute_nodes (uuid, host, hypervisor_hostname, '
                    'hypervisor_type, hypervisor_version, vcpus, memory_mb, '
                    'local_gb, vcpus_used, memory_mb_used, local_gb_used, '
                    'running_vms, current_workload, cpu_allocation_ratio, '
                    'ram_allocation_ratio, disk_allocation_ratio, failed_builds, '
                    "created_at) VALUES ('cn-old', 'host-old', 'host-old', 'QEMU',"
                    ' 1, 8, 1024, 10, 0, 0, 0, 0, 0, 4.0, 1.0, 1.0, 0, '
                    'CURRENT_TIMESTAMP)'
                )
            )
    finally:
        engine.dispose()

    assert 'synced: cell database of this node' in _db_sync(
        tmp_path, fresh_url
    )
    assert _version(fresh_url) == '0007'  # the head
    assert 'stats' in _columns(fresh_url)
    # 0003: the instance's server group and the build's alternates.
    assert {'instance_group_uuid', 'build_alternates'} <= _columns(
        fresh_url, 'instances'
    )
    # 0004: what only the compute API reads back.
    assert 'server_attributes' in _columns(fresh_url, 'instances')
    # 0005: the lock and the instance actions with their events.
    assert {'locked_by', 'locked_reason'} <= _columns(fresh_url, 'instances')
    assert 'request_id' in _columns(fresh_url, 'instance_actions')
    assert 'action_id' in _columns(fresh_url, 'instance_actions_events')
    # 0006: the record of each move.
    assert {'source_compute', 'dest_compute', 'details'} <= _columns(
        fresh_url, 'migrations'
    )
    # 0007: the hidden copy of a cross-cell move.
    assert 'hidden' in _columns(fresh_url, 'instances')

    db = common_db.get_database(fresh_url)
    try:
        with db.session() as session:
            old = session.execute(
                sa.select(models.ComputeNode).where(
                    models.ComputeNode.uuid == 'cn-old'
                )
            ).scalar()
            assert (old.host, old.stats) == ('host-old', None)
            node_records.update_compute_node(
                session,
                ComputeNodeRecord.from_primitive(
                    {
                        'uuid': 'cn-new',
                        'host': 'host-new',
                        'stats': {'rack': 'r1', 'gpu_vendor': 'acme'},
                    }
                ),
            )
            node_records.update_compute_node(
                session,
                ComputeNodeRecord.from_primitive(
                    {
                        'uuid': 'cn-old',
                        'host': 'host-old',
                        'stats': {'rack': 'r2'},
                    }
                ),
            )
        with db.session() as session:
            stats = dict(
                session.execute(
                    sa.select(
                        models.ComputeNode.uuid, models.ComputeNode.stats
                    )
                ).all()
            )
        assert stats == {
            'cn-new': {'rack': 'r1', 'gpu_vendor': 'acme'},
            'cn-old': {'rack': 'r2'},
        }
        _check_migration_rows(db)
    finally:
        db.dispose()

    # A second sync is a no-op; the downgrade drops the column again.
    _db_sync(tmp_path, fresh_url)
    assert _version(fresh_url) == '0007'
    alembic_command.downgrade(_alembic(fresh_url), '0001')
    assert _version(fresh_url) == '0001'
    assert 'stats' not in _columns(fresh_url)
    alembic_command.upgrade(_alembic(fresh_url), 'head')
    assert 'stats' in _columns(fresh_url)


def _check_migration_rows(db):
    """The migrations table on this engine: a move is created, swapped
    from status to status (a swap from the wrong status does not hold),
    found in progress until final, and paged newest first."""
    with db.session() as session:
        first = cell_migrations.create(
            session,
            {
                'instance_uuid': 'inst-1',
                'migration_type': 'resize',
                'status': 'pre-migrating',
                'source_compute': 'host-a',
                'dest_compute': 'host-b',
                'old_flavor': {'name': 'small'},
                'new_flavor': {'name': 'big'},
                'details': {'source_allocations': {'rp-a': {'VCPU': 1}}},
            },
        )
        second = cell_migrations.create(
            session,
            {
                'instance_uuid': 'inst-2',
                'migration_type': 'live-migration',
                'status': 'accepted',
                'source_compute': 'host-b',
            },
        )
    with db.session() as session:
        assert cell_migrations.set_status(
            session, first['uuid'], 'migrating', expected='pre-migrating'
        )
        assert not cell_migrations.set_status(
            session, first['uuid'], 'finished', expected='pre-migrating'
        )
        found = cell_migrations.in_progress(session, 'inst-1')
        assert (found['status'], found['new_flavor']) == (
            'migrating',
            {'name': 'big'},
        )
        assert found['details'] == {
            'source_allocations': {'rp-a': {'VCPU': 1}}
        }
        assert cell_migrations.set_status(session, first['uuid'], 'confirmed')
        assert cell_migrations.in_progress(session, 'inst-1') is None
        newest = cell_migrations.listing(session, {'host': 'host-b'})
        assert [m['uuid'] for m in newest] == [second['uuid'], first['uuid']]
        marker = cell_migrations.marker_of(session, second['uuid'])
        after = cell_migrations.listing(
            session, {'host': 'host-b'}, before=marker
        )
        assert [m['uuid'] for m in after] == [first['uuid']]
