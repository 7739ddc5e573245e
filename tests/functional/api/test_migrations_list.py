"""GET /os-migrations: the migrations of every cell in Nova's shapes per
microversion, its filters, its paging by uuid marker and its policy."""

import datetime

from nimbus.common import db as common_db
from nimbus.db import cell_migrations
from nimbus.db.cell import models


def _add(api, n, **values):
    """Migrations ``0..n-1``, a minute apart (the last the newest)."""
    db = common_db.get_database(api.cell1_url)
    made = []
    base = datetime.datetime(2026, 11, 28, 12, 0, 0)
    with db.session() as session:
        for i in range(n):
            row = dict(
                {
                    'instance_uuid': 'inst-%d' % i,
                    'migration_type': 'resize',
                    'status': 'finished',
                    'source_compute': 'host-a',
                    'source_node': 'node-a',
                    'dest_compute': 'host-b',
                    'dest_node': 'node-b',
                    'user_id': 'u%d' % (i % 2),
                    'project_id': 'p%d' % (i % 2),
                },
                **values,
            )
            made.append(cell_migrations.create(session, row))
        session.flush()
        for i, m in enumerate(made):
            session.query(models.Migration).filter_by(uuid=m['uuid']).update(
                {'created_at': base + datetime.timedelta(minutes=i)}
            )
    return made


def test_the_shapes_by_microversion(api):
    (live,) = _add(api, 1, migration_type='live-migration', status='running')
    old = api.admin('GET', '/v2.1/os-migrations', version='2.1')
    assert old.status_code == 200
    (item,) = old.json['migrations']
    assert item['instance_uuid'] == 'inst-0'
    assert (item['source_compute'], item['dest_compute']) == (
        'host-a',
        'host-b',
    )
    for key in ('migration_type', 'links', 'uuid', 'user_id'):
        assert key not in item
    (item,) = api.admin('GET', '/v2.1/os-migrations', version='2.23').json[
        'migrations'
    ]
    assert item['migration_type'] == 'live-migration'
    assert item['links'][0]['href'].endswith(
        '/v2.1/servers/inst-0/migrations/%d' % live['id']
    )
    (item,) = api.admin('GET', '/v2.1/os-migrations', version='2.80').json[
        'migrations'
    ]
    assert item['uuid'] == live['uuid']
    assert (item['user_id'], item['project_id']) == ('u0', 'p0')


def test_filters(api):
    _add(api, 4)
    _add(
        api,
        1,
        migration_type='evacuation',
        source_compute='host-c',
        dest_compute='host-d',
    )

    def listed(query, version='2.80'):
        response = api.admin(
            'GET', '/v2.1/os-migrations?' + query, version=version
        )
        assert response.status_code == 200, response.text
        return [m['instance_uuid'] for m in response.json['migrations']]

    assert listed('migration_type=evacuation') == ['inst-0']
    assert len(listed('host=host-b')) == 4  # dest host-b
    assert listed('source_compute=host-c') == ['inst-0']
    assert listed('project_id=p1') == ['inst-3', 'inst-1']
    assert listed('status=confirmed') == []
    # An unknown type is a 400 from 2.59 (Nova's schema).
    bad = api.admin(
        'GET', '/v2.1/os-migrations?migration_type=teleport', version='2.80'
    )
    assert bad.status_code == 400


def test_paging_by_uuid_marker(api):
    made = _add(api, 5)
    newest_first = [m['uuid'] for m in reversed(made)]
    first = api.admin('GET', '/v2.1/os-migrations?limit=2', version='2.59')
    assert [m['uuid'] for m in first.json['migrations']] == newest_first[:2]
    link = first.json['migrations_links'][0]['href']
    assert 'marker=%s' % newest_first[1] in link
    rest = api.admin(
        'GET',
        '/v2.1/os-migrations?limit=10&marker=%s' % newest_first[1],
        version='2.59',
    )
    assert [m['uuid'] for m in rest.json['migrations']] == newest_first[2:]
    assert 'migrations_links' not in rest.json
    missing = api.admin(
        'GET', '/v2.1/os-migrations?marker=nope', version='2.59'
    )
    assert missing.status_code == 400
    assert 'Marker nope could not be found' in missing.text


def test_changes_since_and_before(api):
    _add(api, 2)
    bad = api.admin(
        'GET',
        '/v2.1/os-migrations?changes-since=2026-11-29T00:00:00Z'
        '&changes-before=2026-11-28T00:00:00Z',
        version='2.66',
    )
    assert bad.status_code == 400
    not_a_time = api.admin(
        'GET', '/v2.1/os-migrations?changes-since=yesterday', version='2.59'
    )
    assert not_a_time.status_code == 400


def test_only_admins_list_migrations(api):
    _add(api, 1)
    assert api.req('GET', '/v2.1/os-migrations').status_code == 403
