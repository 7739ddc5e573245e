"""The schemas of resize, confirmResize, revertResize and migrate, and the
states the moves start from and end in."""

import pytest

from nimbus.api.schemas import server_actions as schema
from nimbus.common import instance_states as states
from nimbus.common.wsgi import validation


def _ok(name, value, version=(2, 1)):
    return (
        validation.first_error(schema.action_schema(name, version), value)
        is None
    )


@pytest.mark.parametrize(
    'value',
    [
        {'flavorRef': '2'},
        {'flavorRef': 2},
        {'flavorRef': 'http://x/flavors/2'},
        {'flavorRef': '2', 'OS-DCF:diskConfig': 'AUTO'},
    ],
)
def test_resize_takes(value):
    assert _ok('resize', value)


@pytest.mark.parametrize(
    'value',
    [
        None,
        {},
        {'flavorRef': ''},
        {'flavorRef': ' 2'},
        {'flavorRef': None},
        {'flavorRef': '2', 'OS-DCF:diskConfig': 'auto'},
        {'flavorRef': '2', 'extra': 1},
    ],
)
def test_resize_refuses(value):
    assert not _ok('resize', value)


@pytest.mark.parametrize('name', ['confirmResize', 'revertResize'])
def test_confirm_and_revert_take_null_only(name):
    assert _ok(name, None)
    assert _ok(name, {})
    assert not _ok(name, {'x': 1})
    assert not _ok(name, 'yes')


def test_migrate_takes_a_host_from_2_56():
    assert _ok('migrate', None)
    assert not _ok('migrate', {'host': 'h1'})
    assert _ok('migrate', {'host': 'h1'}, (2, 56))
    assert _ok('migrate', {'host': None}, (2, 56))
    assert _ok('migrate', None, (2, 56))
    assert not _ok('migrate', {'host': ''}, (2, 56))
    assert not _ok('migrate', {'host': 'h1', 'force': True}, (2, 56))


def test_the_body_schema_names_the_moves():
    body = schema.body_schema((2, 56))
    for name in ('resize', 'confirmResize', 'revertResize', 'migrate'):
        assert name in body['properties']


def test_move_states():
    assert states.check_actions() == []
    for name in ('resize', 'migrate'):
        action = states.ACTIONS[name]
        assert action.vm_states == (states.ACTIVE, states.STOPPED)
        assert action.task == states.RESIZE_PREP
    assert states.api_status(states.ACTIVE, states.RESIZE_PREP) == 'RESIZE'
    assert states.api_status(states.STOPPED, states.RESIZE_FINISH) == 'RESIZE'
    assert states.api_status(states.RESIZED) == 'VERIFY_RESIZE'
    assert (
        states.api_status(states.RESIZED, states.RESIZE_REVERTING)
        == 'REVERT_RESIZE'
    )
