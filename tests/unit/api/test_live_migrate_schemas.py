"""The schemas of os-migrateLive at 2.1, 2.25, 2.30 and 2.68 and of the
force complete, and the live migration's place in the state machine."""

import pytest

from nimbus.api.schemas import server_actions as schema
from nimbus.api.schemas import server_live_migrate as live_schema
from nimbus.common import instance_states as states
from nimbus.common.wsgi import validation


def _ok(value, version):
    return (
        validation.first_error(
            schema.action_schema('os-migrateLive', version), value
        )
        is None
    )


@pytest.mark.parametrize(
    'value, versions',
    [
        # below 2.25: the three keys, booleans (Nova's strings too)
        (
            {
                'block_migration': False,
                'disk_over_commit': False,
                'host': None,
            },
            {(2, 1), (2, 24)},
        ),
        (
            {'block_migration': 'true', 'disk_over_commit': '0', 'host': 'h1'},
            {(2, 1), (2, 24)},
        ),
        # 2.25: auto, no disk_over_commit
        (
            {'block_migration': 'auto', 'host': None},
            {(2, 25), (2, 30), (2, 67), (2, 68)},
        ),
        (
            {'block_migration': True, 'host': 'h1'},
            {(2, 25), (2, 30), (2, 67), (2, 68)},
        ),
        # 2.30 to 2.67: force
        (
            {'block_migration': 'auto', 'host': 'h1', 'force': True},
            {(2, 30), (2, 67)},
        ),
    ],
)
def test_bodies_by_version(value, versions):
    for version in [(2, 1), (2, 24), (2, 25), (2, 30), (2, 67), (2, 68)]:
        assert _ok(value, version) is (version in versions), version


@pytest.mark.parametrize(
    'value',
    [
        None,
        {},
        {'host': None},
        {'block_migration': 'auto'},
        {'block_migration': 'maybe', 'host': None},
        {'block_migration': True, 'host': ''},
        {'block_migration': True, 'host': ' h1'},
        {'block_migration': True, 'host': None, 'extra': 1},
    ],
)
def test_refused_at_every_version(value):
    for version in [(2, 1), (2, 25), (2, 30), (2, 68)]:
        assert not _ok(value, version)


def test_the_body_schema_names_it():
    assert 'os-migrateLive' in schema.body_schema((2, 68))['properties']


def test_force_complete_schema():
    def ok(body):
        return validation.first_error(live_schema.FORCE_COMPLETE, body) is None

    assert ok({'force_complete': None})
    assert not ok({'force_complete': {}})
    assert not ok({})
    assert not ok({'force_complete': None, 'x': 1})


def test_live_migration_states():
    assert states.check_actions() == []
    action = states.ACTIONS['os-migrateLive']
    assert action.vm_states == (states.ACTIVE, states.PAUSED)
    assert action.task == states.MIGRATING
    assert action.final is None  # the state it was in stays
    for vm_state in (states.ACTIVE, states.PAUSED):
        assert states.api_status(vm_state, states.MIGRATING) == 'MIGRATING'
