"""``compute:servers:resize:cross_cell`` (Nova's name and default ``!``):
checked by resize and migrate without failing them; what it answered
goes to the super conductor (conductor RPC 1.9), which keeps the move in
its cell when it is denied."""

from nimbus.common import db as common_db
from nimbus.db import cell_instances
from tests.functional.api import fixtures
from tests.functional.api.test_servers import boot


def _placed_server(api):
    api.image = api.add_image()
    api.add_compute('host1')
    api.add_flavor()
    api.add_flavor(flavorid='2', name='m1.bigger', vcpus=4)
    uuid = boot(api).json['server']['id']
    api.place(uuid, host='host1')
    return uuid


def _move(api, uuid, body, user):
    response = api.req(
        'POST', '/v2.1/servers/%s/action' % uuid, body, user=user
    )
    assert response.status_code == 202, response.text
    return api.conductor.moves[-1]


def test_nobody_may_move_across_cells_by_default(api):
    uuid = _placed_server(api)
    moved = _move(api, uuid, {'migrate': None}, 'admin')
    assert moved['cross_cell'] is False
    assert moved['cell_uuid'] == api.cell1.uuid


def test_a_policy_file_lets_the_move_choose_another_cell(tmp_path):
    policy = tmp_path / 'policy.yaml'
    policy.write_text(
        '"compute:servers:resize:cross_cell": "rule:admin_api"\n'
    )
    api = fixtures.ApiFixture(
        tmp_path, overrides={'oslo_policy': {'policy_file': str(policy)}}
    )
    try:
        uuid = _placed_server(api)
        resized = _move(api, uuid, {'resize': {'flavorRef': '2'}}, user='demo')
        assert resized['cross_cell'] is False  # a member: still denied
        # The fake conductor does nothing: give the task back by hand.
        with api.cells.db(api.cell1).session() as session:
            cell_instances.transition(
                session, uuid, ['active'], {'task_state': None}
            )
        moved = _move(api, uuid, {'migrate': None}, 'admin')
        assert moved['cross_cell'] is True
    finally:
        common_db.dispose_all()
