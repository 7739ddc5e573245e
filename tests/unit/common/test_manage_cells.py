"""``nimbus-manage cell create`` keeps every cell on a bus of its own."""

import pytest

from nimbus.cmd import manage
from nimbus.common import db as common_db
from nimbus.db import cell_mappings

API_BUS = 'rabbit://nimbus:secret@mq:5672/nimbus'


@pytest.fixture
def manage_conf(tmp_path):
    api_url = 'sqlite:///%s' % (tmp_path / 'api.sqlite')
    path = tmp_path / 'nimbus.conf'
    path.write_text(
        '[DEFAULT]\ntransport_url = %s\n'
        '[api_database]\nconnection = %s\n' % (API_BUS, api_url)
    )

    def run(*args):
        manage.main(['--config-file', str(path)] + list(args))

    run('db', 'sync')
    yield run, common_db.get_database(api_url), tmp_path
    common_db.dispose_all()


def _create(run, tmp_path, name, url):
    run(
        'cell',
        'create',
        '--name',
        name,
        '--transport-url',
        url,
        '--database-connection',
        'sqlite:///%s' % (tmp_path / ('%s.sqlite' % name)),
    )


@pytest.mark.parametrize(
    'url',
    [
        API_BUS,
        'rabbit://other:pw@MQ/nimbus',  # same host and vhost
        'rabbit://a:b@mq2:5672,a:b@mq:5672/nimbus',
    ],
)
def test_a_cell_on_the_api_bus_is_refused(manage_conf, url):
    run, api_db, tmp_path = manage_conf
    with pytest.raises(SystemExit) as info:
        _create(run, tmp_path, 'cell1', url)
    message = str(info.value)
    assert message.startswith(
        'cell create: the transport URL of cell '
        'cell1 reaches the same broker vhost as the '
        'API bus'
    )
    assert cell_mappings.list_cells(api_db) == []


def test_two_cells_on_one_bus_are_refused(manage_conf):
    run, api_db, tmp_path = manage_conf
    _create(run, tmp_path, 'cell1', 'rabbit://nimbus:secret@mq/cell1')
    with pytest.raises(SystemExit) as info:
        _create(run, tmp_path, 'cell2', 'rabbit://x:y@mq:5672/cell1')
    assert 'same broker vhost as cell cell1' in str(info.value)
    # Re-creating cell1 with its own URL (an update) is fine, and so is a
    # cell on another vhost of the same broker.
    _create(run, tmp_path, 'cell1', 'rabbit://nimbus:secret@mq/cell1')
    _create(run, tmp_path, 'cell2', 'rabbit://nimbus:secret@mq/cell2')
    assert [c['name'] for c in cell_mappings.list_cells(api_db)] == [
        'cell1',
        'cell2',
    ]


def test_a_transport_url_that_does_not_parse_is_refused(manage_conf):
    run, api_db, tmp_path = manage_conf
    with pytest.raises(SystemExit) as info:
        _create(run, tmp_path, 'cell1', 'rabbit://u:p@mq:notaport/x')
    assert str(info.value).startswith('cell create: invalid transport URL')


def test_cells_get_the_names_they_are_given(manage_conf):
    run, api_db, tmp_path = manage_conf
    _create(run, tmp_path, 'cell0', 'none:///')
    _create(run, tmp_path, 'cell1', 'rabbit://nimbus:secret@mq/cell1')
    cells = {c['name']: c for c in cell_mappings.list_cells(api_db)}
    assert sorted(cells) == ['cell0', 'cell1']
    assert cells['cell0']['uuid'] == '00000000-0000-0000-0000-000000000000'
    assert cells['cell1']['transport_url'] == 'rabbit://nimbus:secret@mq/cell1'
