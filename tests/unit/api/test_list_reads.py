"""What the compute API reads for a server list and a create's quota
check: the shown columns only, statements made once per query shape, and
no usage read when nothing is limited."""

import contextlib
import datetime
from unittest import mock

from nimbus.api.objects import quota_usage
from nimbus.common import db as common_db
from nimbus.db.cell import models
from nimbus.db.cell_instances import queries

COLUMN_FILTERS = ('host', 'node', 'vm_state')


def _database(tmp_path):
    database = common_db.Database('sqlite:///%s' % (tmp_path / 'cell.db'))
    models.Base.metadata.create_all(database.engine)
    now = datetime.datetime(2026, 11, 30, 0, 0, 0)
    with database.session() as session:
        for index, host in enumerate(('h1', 'h2', 'h1')):
            session.add(
                models.Instance(
                    uuid='00000000-0000-0000-0000-00000000000%d' % index,
                    display_name='vm-%d' % index,
                    project_id='p1',
                    host=host,
                    vm_state='active',
                    flavor={'vcpus': 1},
                    build_alternates={'a large': 'request spec'},
                    created_at=now + datetime.timedelta(seconds=index),
                )
            )
    return database


def _page(connection, filters, limit=10):
    return queries.page(
        connection,
        project_id='p1',
        filters=filters,
        column_filters=COLUMN_FILTERS,
        name=None,
        sort_key='created_at',
        null_default=datetime.datetime(1970, 1, 1),
        reverse=True,
        after=None,
        limit=limit,
    )


def test_a_list_reads_the_shown_columns_with_one_statement_a_shape(tmp_path):
    database = _database(tmp_path)
    queries._PAGES.clear()
    with database.engine.connect() as connection:
        everything = _page(connection, {})
        on_h1 = _page(connection, {'host': 'h1'})
        on_h2 = _page(connection, {'host': 'h2'})
        newest = _page(connection, {'host': 'h1'}, limit=1)
    assert [r.display_name for r in everything] == ['vm-2', 'vm-1', 'vm-0']
    assert [r.display_name for r in on_h1] == ['vm-2', 'vm-0']
    assert [r.display_name for r in on_h2] == ['vm-1']
    assert [r.display_name for r in newest] == ['vm-2']
    assert everything[0].flavor == {'vcpus': 1}
    # The build's request spec is not read (nor decoded) for a list.
    assert 'build_alternates' not in everything[0]._fields
    # Two shapes: no filter, and a host filter (whatever its value/limit).
    assert len(queries._PAGES) == 2


def test_shown_reads_one_instance_without_its_build(tmp_path):
    database = _database(tmp_path)
    with database.engine.connect() as connection:
        row = queries.shown(connection, '00000000-0000-0000-0000-000000000001')
        missing = queries.shown(connection, 'nope')
    assert row.display_name == 'vm-1' and row.hidden is False
    assert 'build_alternates' not in row._fields
    assert missing is None


def _unlimited_deps():
    session = mock.Mock()

    @contextlib.contextmanager
    def session_cm():
        yield session

    conf = mock.Mock()
    conf.quota.count_usage_from_placement = False
    return mock.Mock(conf=conf, api_db=mock.Mock(session=session_cm))


def test_no_usage_is_read_when_nothing_is_limited():
    limits = {'instances': -1, 'cores': -1, 'ram': -1}
    deps = _unlimited_deps()
    with (
        mock.patch.object(
            quota_usage.quotas, 'project_limits_in', return_value=limits
        ),
        mock.patch.object(
            quota_usage.instance_mappings, 'uuids_of_project'
        ) as servers,
    ):
        snap = quota_usage.read_snapshot(deps, 'p1')
        quota_usage.count_cells(deps, None, 'p1', snap)
    servers.assert_not_called()
    assert snap.limits is limits and snap.seen == set()
    assert (
        quota_usage.allowed_instances(
            snap, {'vcpus': 4, 'memory_mb': 512}, 1, 3
        )
        == 3
    )


def test_usage_is_read_when_instances_are_limited():
    limits = {'instances': 10, 'cores': -1, 'ram': -1}
    with (
        mock.patch.object(
            quota_usage.quotas, 'project_limits_in', return_value=limits
        ),
        mock.patch.object(
            quota_usage.instance_mappings,
            'uuids_of_project',
            return_value={'a', 'b'},
        ) as servers,
    ):
        snap = quota_usage.read_snapshot(_unlimited_deps(), 'p1')
    servers.assert_called_once()
    assert snap.used['instances'] == 2
