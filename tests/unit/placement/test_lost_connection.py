"""Placement's engine does not ping connections before use (two round trips
fewer per write, see ``nimbus.common.db.create_engine(hot_path=True)``), so
a connection the database dropped must be replaced by the retry, for reads
and writes alike. Here the server itself kills every pooled connection, as a
database restart or a failover would.

Runs on MariaDB and PostgreSQL whatever ``NIMBUS_TEST_DB`` says (SQLite has
no connections to lose).
"""

import pytest
import sqlalchemy as sa

from nimbus.common import db as common_db
from nimbus.placement import db as placement_db
from nimbus.placement.objects import base
from nimbus.placement.objects import inventory
from nimbus.placement.objects import resource_class
from nimbus.placement.objects import resource_provider as rp_obj
from nimbus.testing import infra

RP = '00000000-0000-0000-0000-00000000ab01'
KILL = {
    'mysql': (
        'SELECT id FROM information_schema.processlist '
        'WHERE db = DATABASE() AND id <> CONNECTION_ID()',
        'KILL CONNECTION %d',
    ),
    'postgresql': (
        'SELECT pid FROM pg_stat_activity '
        'WHERE datname = current_database() '
        'AND pid <> pg_backend_pid()',
        'SELECT pg_terminate_backend(%d)',
    ),
}


@pytest.fixture(params=['mysql', 'postgresql'])
def pdb(request):
    url, cleanup = infra.database(request.param)
    try:
        placement_db.sync(url)
        pdb = base.PlacementDB(url)
        pdb.write(resource_class.sync_standard)
        yield request.param, url, pdb
    finally:
        try:
            common_db.get_database(url).dispose()
        finally:
            cleanup()


def _kill_pooled_connections(kind, url):
    """Kill, from a separate connection, every other session on the
    database: the pooled ones of ``pdb`` included."""
    find, kill = KILL[kind]
    engine = sa.create_engine(url, isolation_level='AUTOCOMMIT')
    try:
        with engine.connect() as conn:
            ids = [r[0] for r in conn.exec_driver_sql(find)]
            for pid in ids:
                conn.exec_driver_sql(kill % pid)
    finally:
        engine.dispose()
    return ids


def test_engine_skips_ping_and_reset(pdb):
    _kind, _url, db = pdb
    assert db.engine.pool._pre_ping is False
    assert (
        db.engine.pool._reset_on_return is sa.pool.base.ResetStyle.reset_none
    )


def test_reads_and_writes_survive_killed_connections(pdb):
    kind, url, db = pdb
    db.write(rp_obj.create, RP, 'node-1', late_lock=True)
    # Warm the pool: several connections now sit in it.
    for _ in range(3):
        assert db.read(rp_obj.get, RP)['name'] == 'node-1'
    assert _kill_pooled_connections(kind, url)
    # The first use of a dead connection fails inside the retry, which
    # takes a fresh one: the caller never sees the loss.
    assert db.read(rp_obj.get, RP)['name'] == 'node-1'
    _kill_pooled_connections(kind, url)
    db.write(
        lambda conn: inventory.set_all(
            conn, rp_obj.get_ref(conn, RP), 0, {'VCPU': {'total': 8}}
        ),
        late_lock=True,
    )
    invs = db.read(
        lambda conn: inventory.get_all(conn, rp_obj.get_ref(conn, RP)['id'])
    )
    assert invs['VCPU']['total'] == 8
