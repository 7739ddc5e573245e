"""The cell conductor client retries lost replies, safely."""

from unittest import mock

import oslo_messaging as messaging
import pytest

from nimbus.common import config
from nimbus.common import context
from nimbus.common import rpc
from nimbus.common.objects import BuildAttempt
from nimbus.common.objects import Instance
from nimbus.conductor import rpcapi


def _v(version):
    return tuple(int(part) for part in version.split('.'))


def _api(replies, cap=None):
    """A client whose sends are recorded; ``cap`` stands for
    ``[upgrade_levels] conductor`` (the real client's can_send_version
    is tested below with oslo.messaging itself)."""
    api = rpcapi.CellConductorAPI.__new__(rpcapi.CellConductorAPI)
    api._client = mock.Mock()
    api._client.can_send_version.side_effect = lambda version: (
        cap is None or _v(version) <= _v(cap)
    )
    prepared = api._client.prepare.return_value
    prepared.call.side_effect = replies
    return api, prepared


@pytest.mark.parametrize(
    'cap, attempts, batches',
    [
        (None, True, True),
        ('1.4', True, True),
        ('1.3', False, True),
        ('1.2', False, False),
    ],
)
def test_upgrade_levels_cap_what_the_client_sends(cap, attempts, batches):
    """``[upgrade_levels] conductor`` is oslo.messaging's version_cap of
    the real client: it decides which form is sent, and a call the cap
    does not allow at all is refused before it leaves."""
    conf = config.build_conf(
        [], overrides={'upgrade_levels': {'conductor': cap}}
    )
    transport = rpc.get_transport(conf, 'inproc:///upgrade-levels')
    try:
        api = rpcapi.CellConductorAPI(transport, conf)
        assert api.takes_build_attempts() is attempts
        assert api.takes_heartbeat_batches() is batches
        if cap is not None and _v(cap) < (1, 5):
            with pytest.raises(messaging.RPCVersionCapError):
                api.reclaimable(context.get_admin_context(), 'h1', 60)
    finally:
        rpc.cleanup_transports(conf)


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
    attempt = BuildAttempt(host='h1', node='h1', result='success')
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
    assert call.kwargs['build_attempt'] == attempt.to_primitive()
    assert api._client.prepare.call_args.kwargs == {'version': '1.4'}


def test_capped_below_1_4_the_attempt_goes_apart():
    """Cell conductors of an older release (a cap of 1.3): the swap at
    1.2, then the record; a swap that did not hold records nothing."""
    done = {'uuid': 'i', 'vm_state': 'active'}
    api, prepared = _api([done, None, None], cap='1.3')
    attempt = BuildAttempt(host='h1', node='n1', result='success')
    ctxt = context.get_admin_context()
    args = (ctxt, 'i', ['building'], {'vm_state': 'active'})
    assert api.instance_update(
        *args, expected_host='h1', build_attempt=attempt
    ) == Instance.from_primitive(done)
    names = [c.args[1] for c in prepared.call.call_args_list]
    assert names == ['instance_update', 'record_build_attempt']
    record = prepared.call.call_args_list[1].kwargs
    assert (record['host'], record['node'], record['result']) == (
        'h1',
        'n1',
        'success',
    )
    assert (
        api.instance_update(*args, expected_host='h1', build_attempt=attempt)
        is None
    )
    assert [c.args[1] for c in prepared.call.call_args_list][2:] == [
        'instance_update'
    ]
    versions = [
        c.kwargs.get('version') for c in api._client.prepare.call_args_list
    ]
    assert versions == ['1.2', '1.0', '1.2']


@pytest.mark.parametrize('cap, deletes', [(None, True), ('1.11', False)])
def test_the_confirm_of_a_cross_cell_move_as_a_call_needs_1_12(cap, deletes):
    """The API's delete in VERIFY_RESIZE waits for the super conductor's
    confirm only when 1.12 may be sent; a cast stays 1.11."""
    conf = config.build_conf(
        [], overrides={'upgrade_levels': {'conductor': cap}}
    )
    transport = rpc.get_transport(conf, 'inproc:///cross-cell-deletes')
    try:
        api = rpcapi.SuperConductorAPI(transport, conf)
        assert api.takes_cross_cell_deletes() is deletes
        assert api.takes_cross_cell_ends() is True
        if not deletes:
            with pytest.raises(messaging.RPCVersionCapError):
                api.confirm_cross_cell_resize(
                    context.get_admin_context(),
                    'i',
                    'c',
                    'req-1',
                    'm',
                    wait=True,
                )
    finally:
        rpc.cleanup_transports(conf)


@pytest.mark.parametrize('cap', [None, '1.15'])
def test_a_brief_swap_needs_1_16_else_the_record_is_answered(cap):
    """A build's last swap asks for a brief answer (1.16): True, or None;
    capped below 1.16 the same swap goes as 1.4 and answers the record."""
    done = {'uuid': 'i', 'vm_state': 'active'}
    replies = [True, None] if cap is None else [done, None]
    api, prepared = _api(replies, cap=cap)
    attempt = BuildAttempt(host='h1', node='h1', result='success')
    ctxt = context.get_admin_context()
    args = (ctxt, 'i', ['building'], {'vm_state': 'active'})
    kwargs = {'expected_host': 'h1', 'build_attempt': attempt, 'brief': True}
    held = api.instance_update(*args, **kwargs)
    assert held == (True if cap is None else Instance.from_primitive(done))
    assert api.instance_update(*args, **kwargs) is None
    call = prepared.call.call_args_list[0]
    assert call.kwargs['build_attempt'] == attempt.to_primitive()
    if cap is None:
        assert call.kwargs['brief'] is True
        assert api._client.prepare.call_args.kwargs == {'version': '1.16'}
    else:
        assert 'brief' not in call.kwargs
        assert api._client.prepare.call_args.kwargs == {'version': '1.4'}
