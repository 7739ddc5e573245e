"""``Database.reads()``: the sessions a thread opens inside share one
transaction (one begin and commit); other threads keep their own."""

import threading

import sqlalchemy as sa

from nimbus.common import db as common_db


def _commits(database):
    commits = []
    sa.event.listen(database.engine, 'commit', lambda conn: commits.append(1))
    return commits


def test_sessions_inside_reads_share_one_transaction(tmp_path):
    database = common_db.Database('sqlite:///%s' % (tmp_path / 'a.db'))
    commits = _commits(database)
    with database.reads() as outer:
        with database.session() as first:
            first.execute(sa.text('SELECT 1'))
        with database.reads() as inner, database.session() as second:
            second.execute(sa.text('SELECT 2'))
        assert first is second is outer is inner
    assert len(commits) == 1
    # Outside it again: a transaction each.
    for _ in range(2):
        with database.session() as session:
            session.execute(sa.text('SELECT 3'))
    assert len(commits) == 3


def test_another_thread_has_its_own_transaction(tmp_path):
    database = common_db.Database('sqlite:///%s' % (tmp_path / 'b.db'))
    seen = {}

    def other():
        with database.session() as session:
            seen['other'] = session

    with database.reads() as outer:
        outer.execute(sa.text('SELECT 1'))
        thread = threading.Thread(target=other)
        thread.start()
        thread.join(30)
        assert seen['other'] is not outer
