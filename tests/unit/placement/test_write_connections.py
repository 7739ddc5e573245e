"""Write transactions reuse a kept connection (``PlacementDB._take_writer``
and ``_keep_writer``): the same one write after write, never one whose
transaction failed, never one idle for too long, at most IDLE_WRITERS."""

import threading

import pytest

from nimbus.placement import db as placement_db
from nimbus.placement.objects import base
from nimbus.placement.objects import resource_provider as rp_obj

RP = '00000000-0000-0000-0000-0000000000%02x'


@pytest.fixture
def pdb(tmp_path):
    url = 'sqlite:///%s/p.sqlite' % tmp_path
    placement_db.sync(url)
    return base.PlacementDB(url)


def _conn_of(pdb):
    seen = []

    def fn(conn):
        seen.append(conn._conn)

    pdb.write(fn)
    return seen[0]


def test_a_write_reuses_the_last_writes_connection(pdb):
    first = _conn_of(pdb)
    assert _conn_of(pdb) is first
    assert pdb._idle_writers == [(first, pdb._idle_writers[0][1])]


def test_a_failed_write_gives_its_connection_back_to_the_pool(pdb):
    pdb.write(rp_obj.create, RP % 1, 'one', late_lock=True)
    used = []

    def fails(conn):
        used.append(conn._conn)
        rp_obj.create(conn, RP % 3, 'three')
        raise RuntimeError('after a statement')

    with pytest.raises(RuntimeError):
        pdb.write(fails)
    assert used[0].closed
    assert all(c is not used[0] for c, _ in pdb._idle_writers)
    # The next write works on another connection and nothing of the
    # failed one was stored.
    pdb.write(rp_obj.create, RP % 2, 'two', late_lock=True)
    names = pdb.read(
        lambda conn: sorted(
            r[0]
            for r in conn.exec_driver_sql(
                'SELECT name FROM resource_providers'
            )
        )
    )
    assert names == ['one', 'two']


def test_an_idle_connection_is_not_kept_for_ever(pdb, monkeypatch):
    first = _conn_of(pdb)
    monkeypatch.setattr(base, 'IDLE_MAX_S', 0.0)
    second = _conn_of(pdb)
    assert second is not first
    assert first.closed


def test_at_most_idle_writers_are_kept(pdb, monkeypatch):
    monkeypatch.setattr(base, 'IDLE_WRITERS', 2)
    conns = [pdb._take_writer() for _ in range(4)]
    for conn in conns:
        pdb._keep_writer(conn)
    assert [c for c, _ in pdb._idle_writers] == conns[:2]
    assert all(c.closed for c in conns[2:])


def test_concurrent_writers_each_get_their_own(pdb):
    errors = []

    def work(k):
        try:
            for i in range(10):
                pdb.write(
                    rp_obj.create,
                    RP % (16 * k + i),
                    'n%d-%d' % (k, i),
                    late_lock=True,
                )
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    count = pdb.read(
        lambda conn: conn.exec_driver_sql(
            'SELECT count(*) FROM resource_providers'
        ).scalar()
    )
    assert count == 40
    assert len(pdb._idle_writers) <= base.IDLE_WRITERS
