"""The cell conductor client retries lost replies, safely."""

from unittest import mock

import oslo_messaging as messaging

from nimbus.common import context
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
    assert result == done
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


def test_idempotent_calls_retry_then_give_up():
    api, prepared = _api([messaging.MessagingTimeout('lost')] * 5)
    try:
        api.instances_on_host(context.get_admin_context(), 'h1')
    except messaging.MessagingTimeout:
        pass
    else:
        raise AssertionError('expected the timeout after the retries')
    assert prepared.call.call_count == 5
