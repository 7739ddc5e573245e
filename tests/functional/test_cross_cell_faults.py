"""A cross-cell resize (tests/functional/test_cross_cell_resize.py) met
by what else happens to a server: its delete in VERIFY_RESIZE, the
confirm window running out, a super conductor that died in the middle
of the move. Same cloud: cell1 with the source host, cell2 with two."""

import time

import pytest

from tests.functional.test_cross_cell_resize import _cloud
from tests.functional.test_cross_cell_resize import _in_target
from tests.functional.test_cross_cell_resize import _resize
from tests.functional.test_cross_cell_resize import SOURCE
from tests.functional.test_server_actions import ADMIN


@pytest.fixture
def api(make_cloud, tmp_path):
    return _cloud(make_cloud, tmp_path)


def _wait_gone(api, uuid, bound=60):
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if api.call('GET', '/servers/%s' % uuid, who=ADMIN).status_code == 404:
            return
        time.sleep(0.05)
    raise AssertionError('%s still shows' % uuid)


def _wait_no_guest(api, host, uuid, bound=60):
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if uuid not in api.guests(host):
            return
        time.sleep(0.05)
    raise AssertionError('%s still has a guest on %s' % (uuid, host))


def test_delete_in_verify_resize_confirms_first(api):
    uuid = api.boot_on_source()
    _resize(api, uuid)
    dest, migration = _in_target(api, uuid, 'resize')
    response = api.call('DELETE', '/servers/%s' % uuid, who=ADMIN)
    assert response.status_code == 204, response.text
    _wait_gone(api, uuid)
    _wait_no_guest(api, dest, uuid)
    # The source cell: no copy, no guest; the migration consumer holds
    # nothing, nor the instance.
    assert api.rows('cell1', uuid) == []
    assert api.rows('cell2', uuid) == []
    assert uuid not in api.guests(SOURCE)
    assert api.allocations(migration) == {}
    assert api.allocations(uuid) == {}
    (source,) = api.migrations_in('cell1', uuid)
    assert source['status'] == 'confirmed'
    (target,) = api.migrations_in('cell2', uuid)
    assert target['status'] == 'confirmed'
