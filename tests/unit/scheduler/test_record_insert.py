"""The scheduler's decision record written by one Core INSERT stores the
rows the ORM path (``scheduling_records.add``) stored: on SQLite, and on
MariaDB or PostgreSQL as ``NIMBUS_TEST_DB`` says."""

import datetime
import os
import types

import pytest
from oslo_db import exception as db_exc
import sqlalchemy as sa

from nimbus import db as nimbus_db
from nimbus.common import db as common_db
from nimbus.db import scheduling_records
from nimbus.db.api import models as api_models
from nimbus.scheduler import db_source
from nimbus.testing import infra


@pytest.fixture
def api(tmp_path):
    kind = os.environ.get('NIMBUS_TEST_DB', 'sqlite')
    if kind == 'sqlite':
        url, cleanup = 'sqlite:///%s' % (tmp_path / 'api.sqlite'), None
    else:
        url, cleanup = infra.database(kind)
    nimbus_db.sync_api(url)
    db = common_db.get_database(url)
    yield db
    db.dispose()
    if cleanup is not None:
        cleanup()


def _stored(db, request_id):
    table = api_models.SchedulingRecord.__table__
    with db.engine.connect() as conn:
        return [
            dict(row._mapping)
            for row in conn.execute(
                sa.select(table)
                .where(table.c.request_id == request_id)
                .order_by(table.c.id)
            )
        ]


def _comparable(rows):
    """The rows without what differs by construction (id, created_at),
    and a check that created_at was set now, as the ORM's default does."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    out = []
    for row in rows:
        row = dict(row)
        created = row.pop('created_at')
        assert abs((now - created).total_seconds()) < 300
        row.pop('id')
        row.pop('request_id')
        out.append(row)
    return out


CASES = [
    # one instance, a plain detail
    (['i-1'], 'scheduled', {'host': 'h1', 'weights': [1.5, 0.25]}),
    # no instance: one record without one
    ([], 'failed', {'reason': 'No valid host', 'filters': {'Ram': 0}}),
    # many: each record keeps its own entry of ``instances``
    (
        ['i-1', 'i-2', 'i-3'],
        'scheduled',
        {
            'instances': [
                {'instance_uuid': 'i-1', 'host': 'h1'},
                {'instance_uuid': 'i-2', 'host': 'h2'},
                {'instance_uuid': 'i-3', 'host': 'h3'},
            ],
            'note': 'ünïcode',
        },
    ),
]


@pytest.mark.parametrize('uuids,outcome,detail', CASES)
def test_core_insert_stores_what_the_orm_stored(api, uuids, outcome, detail):
    with api.session() as s:
        scheduling_records.add(s, 'req-orm', uuids, outcome, detail)
    record = db_source.db_recorder(api)
    spec = types.SimpleNamespace(request_id='req-core', instance_uuids=uuids)
    record(None, outcome, spec, detail)

    orm_rows = _stored(api, 'req-orm')
    core_rows = _stored(api, 'req-core')
    assert len(orm_rows) == max(1, len(uuids))
    assert _comparable(core_rows) == _comparable(orm_rows)
    assert all(r['updated_at'] is None for r in core_rows)
    # Readers see the same records through the module's ORM reads.
    with api.session() as s:
        got = scheduling_records.where(s, request_id='req-core')
        assert [(r.instance_uuid, r.outcome, r.detail) for r in got] == [
            (r['instance_uuid'], r['outcome'], r['detail'])
            for r in _comparable(orm_rows)
        ]


def test_recorder_falls_back_to_the_context_request_id(api):
    record = db_source.db_recorder(api)
    spec = types.SimpleNamespace(request_id=None, instance_uuids=['i-9'])
    record(types.SimpleNamespace(request_id='req-ctx'), 'failed', spec, {})
    rows = _stored(api, 'req-ctx')
    assert [(r['instance_uuid'], r['outcome'], r['detail']) for r in rows] == [
        ('i-9', 'failed', {})
    ]


def test_a_failed_insert_leaves_no_row(api, monkeypatch):
    """The INSERT and its transaction are one: an error rolls it back."""
    rows = scheduling_records._rows('req-bad', ['i-1'], 'scheduled', {})
    rows.append(
        {
            'request_id': None,
            'instance_uuid': 'i-2',
            'outcome': 'scheduled',
            'detail': {},
        }
    )
    monkeypatch.setattr(scheduling_records, '_rows', lambda *a: rows)
    record = db_source.db_recorder(api)
    spec = types.SimpleNamespace(request_id='req-bad', instance_uuids=['i-1'])
    with pytest.raises((sa.exc.DBAPIError, db_exc.DBError)):
        record(None, 'scheduled', spec, {})
    assert _stored(api, 'req-bad') == []
