"""The cell conductor client retries lost replies, safely."""

from unittest import mock

import oslo_messaging as messaging
import pytest

from nimbus.common import context
from nimbus.common.objects import Instance
from nimbus.conductor import rpcapi


def _api(replies):
    api = rpcapi.CellConductorAPI.__new__(rpcapi.CellConductorAPI)
    api._client = mock.Mock()
    prepared = api._client.prepare.return_value
    prepared.call.side_effect = replies
    return api, prepared


def test_instance_update_retry_accepts_the_state_it_moved_to():
    done = {'uuid': 'i', 'vm_state': 'active'}
    api, prepared = _api([messaging.MessagingTimeout('lost'), done])
    result = api.instance_update(
        context.get_admin_context(), 'i', ['building'], {'vm_state': 'active'}
    )
    assert result == Instance(uuid='i', vm_state='active')
    first, second = prepared.call.call_args_list
    assert first.kwargs['expected_vm_states'] == ['building']
    assert second.kwargs['expected_vm_states'] == ['building', 'active']


def test_task_only_updates_retry_unchanged():
    api, prepared = _api([messaging.MessagingTimeout('lost'), {'uuid': 'i'}])
    api.instance_update(
        context.get_admin_context(),
        'i',
        ['building'],
        {'task_state': 'spawning'},
    )
    assert [
        c.kwargs['expected_vm_states'] for c in prepared.call.call_args_list
    ] == [['building'], ['building']]


@pytest.mark.slow
def test_idempotent_calls_retry_then_give_up():
    api, prepared = _api([messaging.MessagingTimeout('lost')] * 5)
    try:
        api.instances_on_host(context.get_admin_context(), 'h1')
    except messaging.MessagingTimeout:
        pass
    else:
        raise AssertionError('expected the timeout after the retries')
    assert prepared.call.call_count == 5


def test_answers_are_instances():
    """instance_update, instances_on_host and group_members answer
    Instance records:
    versioned primitives, or the unversioned dicts of an older cell
    conductor (loaded as 1.0); a refused swap stays None."""
    record = Instance(uuid='i', host='h1', vm_state='active', flavor={'a': 1})
    api, _ = _api(
        [
            record.to_primitive(),
            None,
            [record.to_primitive(), {'uuid': 'j', 'vm_state': 'building'}],
            [{'uuid': 'k', 'host': 'h2', 'vm_state': 'active'}],
        ]
    )
    ctxt = context.get_admin_context()
    assert api.instance_update(ctxt, 'i', ['building'], {}) == record
    assert api.instance_update(ctxt, 'i', ['building'], {}) is None
    assert api.instances_on_host(ctxt, 'h1') == [
        record,
        Instance(uuid='j', vm_state='building'),
    ]
    assert api.group_members(ctxt, 'g') == [
        Instance(uuid='k', host='h2', vm_state='active')
    ]


def test_build_attempt_rides_on_the_swap():
    done = {'uuid': 'i', 'vm_state': 'active'}
    api, prepared = _api([done])
    api._with_attempt = True
    attempt = {'host': 'h1', 'node': 'h1', 'result': 'success', 'reason': None}
    assert api.instance_update(
        context.get_admin_context(),
        'i',
        ['building'],
        {'vm_state': 'active'},
        expected_host='h1',
        build_attempt=attempt,
    ) == Instance.from_primitive(done)
    (call,) = prepared.call.call_args_list
    assert call.args[1] == 'instance_update'
    assert call.kwargs['build_attempt'] == attempt
    assert api._client.prepare.call_args.kwargs == {'version': '1.4'}


def test_older_cell_conductor_gets_the_attempt_apart():
    """A cell conductor older than 1.4: the swap at 1.2, then the record;
    later swaps skip 1.4; a swap that did not hold records nothing."""
    done = {'uuid': 'i', 'vm_state': 'active'}
    too_old = messaging.RemoteError('UnsupportedVersion', 'no 1.4')
    api, prepared = _api([too_old, done, None, None])
    api._with_attempt = True
    attempt = {'host': 'h1', 'node': 'n1', 'result': 'success', 'reason': None}
    ctxt = context.get_admin_context()
    args = (ctxt, 'i', ['building'], {'vm_state': 'active'})
    assert api.instance_update(
        *args, expected_host='h1', build_attempt=attempt
    ) == Instance.from_primitive(done)
    assert api._with_attempt is False
    names = [c.args[1] for c in prepared.call.call_args_list]
    assert names == [
        'instance_update',
        'instance_update',
        'record_build_attempt',
    ]
    record = prepared.call.call_args_list[2].kwargs
    assert (record['host'], record['node'], record['result']) == (
        'h1',
        'n1',
        'success',
    )
    assert (
        api.instance_update(*args, expected_host='h1', build_attempt=attempt)
        is None
    )
    assert [c.args[1] for c in prepared.call.call_args_list][3:] == [
        'instance_update'
    ]
    versions = [
        c.kwargs.get('version') for c in api._client.prepare.call_args_list
    ]
    assert versions == ['1.4', '1.2', '1.0', '1.2']
