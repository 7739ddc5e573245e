"""Marked write statements run on the DBAPI cursor answer as SQLAlchemy.

:class:`nimbus.placement.objects.statements.Connection` runs a marked
statement from its compiled form kept per dialect. These tests run the
same statements both ways on one SQLite database and compare what is
stored and what is read, that errors keep SQLAlchemy's types, and that
what may not take the direct path (an expanding ``IN``, an unmarked
statement) does not.
"""

import datetime

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from nimbus.placement import db as placement_db
from nimbus.placement.db import models as m
from nimbus.placement.objects import base
from nimbus.placement.objects import resource_provider as rp_obj
from nimbus.placement.objects import statements


@pytest.fixture
def pdb(tmp_path):
    url = 'sqlite:///%s/p.sqlite' % tmp_path
    placement_db.sync(url)
    return base.PlacementDB(url)


def _insert(conn, uuid, name, when):
    return conn.execute(
        rp_obj._INSERT,
        {
            'uuid': uuid,
            'name': name,
            'generation': 0,
            'parent_provider_id': None,
            'root_provider_id': None,
            'created_at': when,
            'updated_at': when,
        },
    ).inserted_primary_key[0]


def test_a_direct_insert_stores_what_sqlalchemy_stores(pdb):
    when = datetime.datetime(2026, 11, 29, 1, 2, 3)
    with pdb.engine.begin() as conn:
        slow = _insert(
            conn, 'a' * 8 + '-0000-0000-0000-' + '0' * 12, 'a', when
        )
        fast = _insert(
            statements.Connection(conn),
            'b' * 8 + '-0000-0000-0000-' + '0' * 12,
            'b',
            when,
        )
    assert fast == slow + 1
    with pdb.engine.connect() as conn:
        raw = conn.exec_driver_sql(
            'SELECT name, created_at, updated_at FROM resource_providers '
            'ORDER BY id'
        ).all()
        read = conn.execute(
            sa.select(m.RP.c.created_at).order_by(m.RP.c.id)
        ).all()
    # the same text in the database (the DateTime bind processor ran)
    assert [tuple(r[1:]) for r in raw] == [tuple(raw[0][1:])] * 2
    assert [r[0] for r in read] == [when, when]


def test_reads_updates_and_executemany_answer_as_sqlalchemy(pdb):
    when = datetime.datetime(2026, 11, 29)
    with pdb.engine.begin() as conn:
        fast = statements.Connection(conn)
        rp_id = _insert(
            fast, '1' * 8 + '-0000-0000-0000-' + '0' * 12, 'x', when
        )
        fast.execute(rp_obj._SET_ROOT, {'b_id': rp_id, 'b_root': rp_id})
        ref = rp_obj.get_ref(fast, '1' * 8 + '-0000-0000-0000-' + '0' * 12)
        assert ref == rp_obj.get_ref(
            conn, '1' * 8 + '-0000-0000-0000-' + '0' * 12
        )
        # the generation compare-and-swap: a row count of 1, then 0
        assert base.increment_generation(fast, rp_id, 0) == 1
        res = fast.execute(
            base._INCREMENT, {'b_id': rp_id, 'b_expected': 0, 'b_new': 1}
        )
        assert res.rowcount == 0
        # the counters: a statement with values of its own (id == 1, + 1)
        before = base.read_state(conn)
        base.bump(fast, structure=True, usage=True)
        assert base.read_state(conn) == (before[0] + 1, before[1] + 1)
        fast.execute(
            rp_obj.m.RPA.insert(),  # not marked: SQLAlchemy runs it
            [{'resource_provider_id': rp_id, 'aggregate_uuid': 'g1'}],
        )
        from nimbus.placement.objects import aggregate

        fast.execute(
            aggregate._INSERT,
            [
                {'resource_provider_id': rp_id, 'aggregate_uuid': a}
                for a in ('g2', 'g3')
            ],
        )
        mine = fast.execute(aggregate._PROVIDER_AGGREGATES, {'b_rp': rp_id})
        theirs = conn.execute(aggregate._PROVIDER_AGGREGATES, {'b_rp': rp_id})
        assert sorted(mine.all()) == sorted(tuple(r) for r in theirs)
        assert sorted(r[0] for r in mine) == ['g1', 'g2', 'g3']
        row = fast.execute(rp_obj._REF, {'b_uuid': ref['uuid']})
        assert row.mappings().first() == {
            'id': rp_id,
            'uuid': ref['uuid'],
            'generation': 1,
        }


def test_a_clash_is_sqlalchemys_integrity_error(pdb):
    when = datetime.datetime(2026, 11, 29)
    with pdb.engine.begin() as conn:
        fast = statements.Connection(conn)
        _insert(fast, 'c' * 8 + '-0000-0000-0000-' + '0' * 12, 'c', when)
        with pytest.raises(sa_exc.IntegrityError):
            _insert(fast, 'c' * 8 + '-0000-0000-0000-' + '0' * 12, 'd', when)


def test_a_missing_parameter_is_refused_not_sent_as_null(pdb):
    with pdb.engine.begin() as conn:
        with pytest.raises(sa_exc.StatementError):
            statements.Connection(conn).execute(rp_obj._REF, {})


def test_an_expanding_in_goes_through_sqlalchemy(pdb):
    stmt = statements.fast(base._PROVIDER_IDS)
    assert (
        statements._build(stmt, pdb.engine.dialect, ('uuids',))
        is statements._SLOW
    )
    with pdb.engine.begin() as conn:
        out = base.provider_ids(statements.Connection(conn), ['nope'])
    assert out == {}


def test_write_hands_the_direct_connection_and_commits_it(pdb):
    when = datetime.datetime(2026, 11, 29)
    uuid = 'e' * 8 + '-0000-0000-0000-' + '0' * 12

    def create(conn):
        assert isinstance(conn, statements.Connection)
        return _insert(conn, uuid, 'e', when)

    pdb.write(create)
    assert pdb.read(rp_obj.get_ref, uuid)['uuid'] == uuid


@pytest.mark.parametrize(
    'stmt, params',
    [
        (base._INCREMENT, {'b_id': 7, 'b_expected': 2, 'b_new': 3}),
        (base._BUMP[True, True], {}),
        (rp_obj._REF, {'b_uuid': 'f' * 36}),
    ],
)
def test_pymysqls_named_paramstyle_gets_sqlalchemys_parameters(stmt, params):
    # PyMySQL's paramstyle is pyformat (%(name)s): the plan keeps the
    # text SQLAlchemy sends and hands the cursor the same dict.
    from sqlalchemy.dialects.mysql import pymysql as mysql_pymysql

    dialect = mysql_pymysql.dialect(paramstyle='pyformat')
    plan = statements._build(stmt, dialect, tuple(sorted(params)))
    assert plan is not statements._SLOW
    compiled = stmt.compile(dialect=dialect)
    assert plan.sql == compiled.string
    assert '%(' in plan.sql or not compiled.binds
    assert statements._values(plan, params) == compiled.construct_params(
        params
    )
