"""/v2/accelerator_requests: create, list, show, bind and unbind by JSON
patch (202, then the binder), bind_state=resolved (423), delete; RBAC."""

import sys

import oslo_messaging
import pytest

from nimbus.accelerator import states
from nimbus.accelerator.agent import exception as agent_exception
from tests.functional.accelerator.conftest import ADMIN
from tests.functional.accelerator.conftest import HOST
from tests.functional.accelerator.conftest import INSTANCE
from tests.functional.accelerator.conftest import MEMBER
from tests.functional.accelerator.conftest import OTHER_MEMBER
from tests.functional.accelerator.conftest import READER
from tests.functional.accelerator.conftest import SERVICE
from tests.functional.accelerator.conftest import SERVICE_TOKEN

SERVICE_ADMIN = {'X-Auth-Token': 'nimbus:service', 'X-Roles': 'admin,service'}
from tests.functional.accelerator.conftest import error_text

ARQS = '/v2/accelerator_requests'
RP0 = '33333333-0000-4000-8000-000000000000'
OTHER_INSTANCE = '0b0c0d0e-0000-4000-8000-00000000abcd'

FIELDS = {
    'uuid',
    'state',
    'device_profile_name',
    'device_profile_group_id',
    'hostname',
    'device_rp_uuid',
    'instance_uuid',
    'project_id',
    'attach_handle_uuid',
    'attach_handle_type',
    'attach_handle_info',
    'links',
    'created_at',
    'updated_at',
}


def test_one_arq_per_device_a_group_asks_for(api):
    api.profile(
        'two-groups',
        groups=[
            {'resources:FPGA': '2', 'trait:CUSTOM_A': 'required'},
            {'resources:PGPU': 1},
        ],
    )
    arqs = api.arqs('two-groups')
    assert [a['device_profile_group_id'] for a in arqs] == [0, 0, 1]
    assert len({a['uuid'] for a in arqs}) == 3
    for arq in arqs:
        assert set(arq) == FIELDS
        assert arq['state'] == states.INITIAL
        assert arq['device_profile_name'] == 'two-groups'
        assert arq['hostname'] is None and arq['instance_uuid'] is None
        assert arq['links'][0]['href'].endswith(ARQS + '/' + arq['uuid'])
    assert arqs[0]['attach_handle_type'] == ''
    assert arqs[0]['attach_handle_info'] == {}


@pytest.mark.parametrize('version', ['2.0', '2.1', '2.2', '2.3'])
def test_project_id_is_shown_at_every_version_as_from_cyborg(api, version):
    api.profile()
    [arq] = api.arqs(headers=MEMBER)
    shown = api.get(ARQS + '/' + arq['uuid'], version=version).json
    assert set(shown) == FIELDS
    assert shown['project_id'] == 'p1'


@pytest.mark.parametrize(
    'body,status,needle',
    [
        ({'device_profile_name': 'nope'}, 404, 'nope'),
        ({}, 400, "'device_profile_name' is a required property"),
        ({'device_profile_name': 3}, 400, 'device_profile_name'),
        ({'device_profile_name': 'x', 'colour': 1}, 400, 'colour'),
    ],
)
def test_bad_creates(api, body, status, needle):
    response = api.post(ARQS, body, headers=SERVICE)
    assert response.status_code == status
    assert needle in error_text(response)


def test_bind_is_recorded_then_done_by_the_binder(api):
    api.profile()
    [arq] = api.arqs()
    response = api.bind([arq])
    assert response.status_code == 202
    shown = api.get(ARQS + '/' + arq['uuid']).json
    assert shown['state'] == states.BIND_STARTED
    assert (
        shown['hostname'],
        shown['device_rp_uuid'],
        shown['instance_uuid'],
    ) == (HOST, RP0, INSTANCE)
    # Still binding: the compute's resolved query is told to wait.
    response = api.get(
        ARQS,
        params={'instance': INSTANCE, 'bind_state': 'resolved'},
        headers=SERVICE,
    )
    assert response.status_code == 423
    assert arq['uuid'] in error_text(response)
    api.bind_pass()
    shown = api.get(ARQS + '/' + arq['uuid']).json
    assert shown['state'] == states.BOUND
    assert shown['attach_handle_type'] == 'PCI'
    assert shown['attach_handle_info'] == {
        'bus': '5e',
        'device': '00',
        'domain': '0000',
        'function': '0',
    }
    assert api.events.sent == [(arq['uuid'], INSTANCE, 'completed')]
    resolved = api.get(
        ARQS,
        params={'instance': INSTANCE, 'bind_state': 'resolved'},
        headers=SERVICE,
    )
    assert resolved.status_code == 200
    assert [a['uuid'] for a in resolved.json['arqs']] == [arq['uuid']]


def test_a_failed_bind_is_resolved_too(api):
    api.profile()
    [arq] = api.arqs()
    api.agent.fail = 'bitstream rejected'
    api.bind([arq])
    api.bind_pass()
    failed = api.get(ARQS + '/' + arq['uuid']).json
    assert failed['state'] == states.BIND_FAILED
    # Cyborg's fields, and why (for the compute's fault).
    assert set(failed) == FIELDS | {'failure_reason'}
    assert 'bitstream rejected' in failed['failure_reason']
    assert api.events.sent == [(arq['uuid'], INSTANCE, 'failed')]
    response = api.get(
        ARQS, params={'instance': INSTANCE, 'bind_state': 'resolved'}
    )
    assert response.status_code == 200


class DriverCrashed(Exception):
    """Not of an allowed module: the binder gets a RemoteError."""


def _remote(exc):
    """``exc`` as the binder gets it from an agent over oslo.messaging:
    serialized with its traceback there, deserialized here."""
    from oslo_messaging._drivers import common as rpc_common

    from nimbus.common import rpc

    try:
        raise exc
    except Exception:
        wire = rpc_common.serialize_remote_exception(sys.exc_info())
    return rpc_common.deserialize_remote_exception(wire, rpc.ALLOWED_EXMODS)


@pytest.mark.parametrize(
    'error,says',
    [
        (
            agent_exception.ProgrammingFailed(
                device='11111111 (fake-fpga)',
                host=HOST,
                arq='a',
                reason='bitstream /var/lib/nimbus/x.bin rejected',
            ),
            'Programming device 11111111 (fake-fpga) on compute1 for ARQ a '
            'failed: bitstream <path> rejected',
        ),
        (
            ValueError('cannot open /dev/fpga0'),
            'on compute1 failed: ValueError: cannot open <path>',
        ),
        (
            DriverCrashed('firmware at C:/fw/a.img crashed'),
            'on compute1 failed: Remote error: DriverCrashed firmware at '
            '<path> crashed',
        ),
        (
            oslo_messaging.MessagingTimeout('Timed out'),
            'the accelerator agent on compute1 did not answer in time',
        ),
    ],
    ids=['programming-failed', 'builtin', 'remote-error', 'timeout'],
)
def test_a_failed_bind_says_what_and_where_without_traceback(api, error, says):
    api.profile()
    [arq] = api.arqs()
    if not isinstance(error, oslo_messaging.MessagingTimeout):
        error = _remote(error)
        assert 'Traceback' in str(error)  # what the wire carried
    api.agent.fail = error
    api.bind([arq])
    api.bind_pass()
    reason = api.get(ARQS + '/' + arq['uuid']).json['failure_reason']
    assert says in reason
    assert HOST in reason
    for leak in ('Traceback', 'File "', '.py', '/work', '/usr', '\n'):
        assert leak not in reason, reason


def test_two_arqs_take_two_handles_of_one_device(api):
    api.profile(groups=[{'resources:FPGA': 2}])
    arqs = api.arqs()
    assert api.bind(arqs).status_code == 202
    api.bind_pass()
    shown = [api.get(ARQS + '/' + a['uuid']).json for a in arqs]
    assert [a['state'] for a in shown] == [states.BOUND] * 2
    assert {a['attach_handle_info']['device'] for a in shown} == {'00', '01'}


def test_unbind_by_remove(api):
    api.profile()
    [arq] = api.arqs()
    api.bind([arq])
    api.bind_pass()
    patch = {
        arq['uuid']: [
            {'path': '/hostname', 'op': 'remove'},
            {'path': '/device_rp_uuid', 'op': 'remove'},
            {'path': '/instance_uuid', 'op': 'remove'},
        ]
    }
    assert api.patch(ARQS, patch, headers=SERVICE).status_code == 202
    shown = api.get(ARQS + '/' + arq['uuid']).json
    assert shown['state'] == states.UNBOUND
    assert shown['hostname'] is None and shown['attach_handle_info'] == {}
    assert [a['uuid'] for _h, a in api.agent.released] == [arq['uuid']]
    # An unbound ARQ may be bound again.
    assert api.bind([arq]).status_code == 202
    api.bind_pass()
    assert api.get(ARQS + '/' + arq['uuid']).json['state'] == states.BOUND


def test_binding_a_bound_arq_is_409(api):
    api.profile()
    [arq] = api.arqs()
    api.bind([arq])
    api.bind_pass()
    response = api.bind([arq])
    assert response.status_code == 409
    assert 'Bound' in error_text(response)


def _ops(**fields):
    return [
        {'path': '/' + k, 'op': 'add', 'value': v} for k, v in fields.items()
    ]


@pytest.mark.parametrize(
    'make_patch,status,needle',
    [
        (
            lambda u: {u: _ops(hostname=HOST, device_rp_uuid=RP0)},
            400,
            '/instance_uuid',
        ),
        (
            lambda u: {
                u: _ops(
                    hostname=HOST, device_rp_uuid='x', instance_uuid=INSTANCE
                )
            },
            400,
            "'x'",
        ),
        (
            lambda u: {
                u: _ops(
                    hostname=HOST, device_rp_uuid=RP0, instance_uuid=INSTANCE
                )
                + [{'path': '/hostname', 'op': 'remove'}]
            },
            400,
            'not both',
        ),
        (
            lambda u: {u: [{'path': '/state', 'op': 'add', 'value': 'Bound'}]},
            400,
            '/state',
        ),
        (
            lambda u: {
                u: [{'path': '/hostname', 'op': 'replace', 'value': 'h'}]
            },
            400,
            'replace',
        ),
        (
            lambda u: {
                u: [{'path': '/hostname', 'op': 'add'}]
                + _ops(device_rp_uuid=RP0, instance_uuid=INSTANCE)
            },
            400,
            'no value',
        ),
        (lambda u: {'not-a-uuid': _ops(hostname=HOST)}, 400, 'not-a-uuid'),
        (lambda u: {u: []}, 400, '[]'),
        (lambda u: {}, 400, 'JSON does not validate'),
        (
            lambda u: {
                '5d5ba3b9-2d58-4ac9-8b3d-2b7c8b0f5a11': _ops(
                    hostname=HOST, device_rp_uuid=RP0, instance_uuid=INSTANCE
                )
            },
            404,
            '5d5ba3b9-2d58-4ac9-8b3d-2b7c8b0f5a11',
        ),
    ],
)
def test_bad_patches(api, make_patch, status, needle):
    api.profile()
    [arq] = api.arqs()
    response = api.patch(ARQS, make_patch(arq['uuid']), headers=SERVICE)
    assert response.status_code == status, response.text
    assert needle in error_text(response)
    assert api.get(ARQS + '/' + arq['uuid']).json['state'] == states.INITIAL


def test_project_id_patch_needs_2_1(api):
    api.profile()
    [arq] = api.arqs()
    patch = {
        arq['uuid']: _ops(
            hostname=HOST,
            device_rp_uuid=RP0,
            instance_uuid=INSTANCE,
            project_id='p9',
        )
    }
    # as Cyborg: 406 below 2.1, and only an administrator may set it
    assert api.patch(ARQS, patch, headers=SERVICE).status_code == 406
    response = api.patch(ARQS, patch, headers=SERVICE, version='2.1')
    assert response.status_code == 403
    assert 'administrator' in error_text(response)
    assert (
        api.patch(
            ARQS, patch, headers=SERVICE_ADMIN, version='2.1'
        ).status_code
        == 202
    )
    assert (
        api.get(ARQS + '/' + arq['uuid'], version='2.1').json['project_id']
        == 'p9'
    )


def test_list_by_instance(api):
    api.profile(groups=[{'resources:FPGA': 2}])
    first, second = api.arqs()
    api.bind([first])
    api.bind([second], instance=OTHER_INSTANCE)
    listed = api.get(ARQS, params={'instance': INSTANCE}).json['arqs']
    assert [a['uuid'] for a in listed] == [first['uuid']]
    assert len(api.get(ARQS).json['arqs']) == 2
    for params, needle in (
        ({'instance': 'x'}, "'x'"),
        ({'bind_state': 'resolved'}, 'instance'),
        ({'instance': INSTANCE, 'bind_state': 'bound'}, 'bind_state'),
        ({'host': 'h'}, "'host'"),
    ):
        response = api.get(ARQS, params=params)
        assert response.status_code == 400
        assert needle in error_text(response)


def test_show_unknown_is_404(api):
    response = api.get(ARQS + '/5d5ba3b9-2d58-4ac9-8b3d-2b7c8b0f5a11')
    assert response.status_code == 404


def test_delete_by_uuids_frees_the_device(api):
    api.profile(groups=[{'resources:FPGA': 2}])
    first, second = api.arqs()
    api.bind([first])
    api.bind_pass()
    response = api.delete(
        ARQS,
        params={'arqs': '%s,%s' % (first['uuid'], second['uuid'])},
        headers=SERVICE,
    )
    assert response.status_code == 204
    assert api.get(ARQS).json['arqs'] == []
    assert [a['uuid'] for _h, a in api.agent.released] == [first['uuid']]
    # As Cyborg: by uuids is not idempotent (by instance is).
    assert (
        api.delete(
            ARQS, params={'arqs': first['uuid']}, headers=SERVICE
        ).status_code
        == 404
    )


def test_delete_of_a_known_and_an_unknown_arq_deletes_nothing(api):
    api.profile()
    [arq] = api.arqs()
    unknown = '5d5ba3b9-2d58-4ac9-8b3d-2b7c8b0f5a11'
    response = api.delete(
        ARQS, params={'arqs': '%s,%s' % (arq['uuid'], unknown)}
    )
    assert response.status_code == 404
    assert unknown in error_text(response)
    assert [a['uuid'] for a in api.get(ARQS).json['arqs']] == [arq['uuid']]


def test_delete_one_by_its_path(api):
    """``DELETE /v2/accelerator_requests/{uuid}`` (openstacksdk's form)."""
    api.profile(groups=[{'resources:FPGA': 2}])
    first, second = api.arqs()
    api.bind([first])
    api.bind_pass()
    response = api.delete(ARQS + '/' + first['uuid'], headers=SERVICE)
    assert response.status_code == 204
    assert [a['uuid'] for a in api.get(ARQS).json['arqs']] == [second['uuid']]
    assert [a['uuid'] for _h, a in api.agent.released] == [first['uuid']]
    again = api.delete(ARQS + '/' + first['uuid'], headers=SERVICE)
    assert again.status_code == 404
    assert first['uuid'] in str(again.json)
    assert api.delete(ARQS + '/not-a-uuid', headers=SERVICE).status_code == 400


def test_delete_by_instance(api):
    api.profile(groups=[{'resources:FPGA': 2}])
    first, second = api.arqs()
    api.bind([first])
    api.bind([second], instance=OTHER_INSTANCE)
    response = api.delete(ARQS, params={'instance': INSTANCE}, headers=SERVICE)
    assert response.status_code == 204
    assert [a['uuid'] for a in api.get(ARQS).json['arqs']] == [second['uuid']]


@pytest.mark.parametrize(
    'params,needle',
    [
        ({}, "'arqs'"),
        ({'arqs': 'a', 'instance': INSTANCE}, 'exactly one'),
        ({'arqs': 'x,y'}, "'x'"),
        ({'instance': 'x'}, "'x'"),
        ({'other': '1'}, "'other'"),
    ],
)
def test_malformed_deletes_are_400(api, params, needle):
    response = api.delete(ARQS, params=params, headers=SERVICE)
    assert response.status_code == 400
    assert needle in error_text(response)


# --- RBAC -------------------------------------------------------------------


@pytest.mark.parametrize(
    'headers,status',
    [
        (MEMBER, 403),
        (READER, 403),
        (OTHER_MEMBER, 403),
        (SERVICE, 202),
        # an admin without the service role may not bind (Cyborg)
        (ADMIN, 403),
        (SERVICE_TOKEN, 202),
    ],
)
def test_only_the_service_role_binds(api, headers, status):
    api.profile()
    [arq] = api.arqs(headers=MEMBER)
    response = api.bind([arq], headers=headers)
    assert response.status_code == status
    if status == 403:
        assert 'cyborg:arq:update' in error_text(response)
        assert (
            api.get(ARQS + '/' + arq['uuid']).json['state'] == states.INITIAL
        )


@pytest.mark.parametrize(
    'headers,status',
    [
        (MEMBER, 403),
        (READER, 403),
        (SERVICE, 204),
        (ADMIN, 403),
        (SERVICE_TOKEN, 204),
    ],
)
def test_only_the_service_role_deletes_by_instance(api, headers, status):
    api.profile()
    [arq] = api.arqs(headers=MEMBER)
    api.bind([arq])
    response = api.delete(ARQS, params={'instance': INSTANCE}, headers=headers)
    assert response.status_code == status
    assert len(api.get(ARQS).json['arqs']) == (1 if status == 403 else 0)


@pytest.mark.parametrize(
    'headers,status',
    [
        (MEMBER, 403),
        (READER, 403),
        (OTHER_MEMBER, 404),
        (ADMIN, 403),
        (SERVICE, 204),
        (SERVICE_TOKEN, 204),
    ],
)
@pytest.mark.parametrize('form', ['query', 'path'])
def test_only_the_service_role_deletes_a_bound_arq(api, headers, status, form):
    """The hole of issue 23: an admin token (or the owning project's
    member) deleting a bound ARQ would free a running server's device."""
    api.profile()
    [arq] = api.arqs(headers=MEMBER)
    api.bind([arq])
    api.bind_pass()
    if form == 'query':
        response = api.delete(
            ARQS, params={'arqs': arq['uuid']}, headers=headers
        )
    else:
        response = api.delete(ARQS + '/' + arq['uuid'], headers=headers)
    assert response.status_code == status, response.text
    left = api.get(ARQS).json['arqs']
    if status == 204:
        assert left == []
        assert [a['uuid'] for _h, a in api.agent.released] == [arq['uuid']]
    else:
        assert [a['state'] for a in left] == [states.BOUND]
        assert api.agent.released == []
    if status == 403 and headers is not READER:
        assert 'only the service role' in error_text(response)


def test_unbind_needs_the_service_role(api):
    api.profile()
    [arq] = api.arqs(headers=MEMBER)
    api.bind([arq])
    api.bind_pass()
    unbind = {arq['uuid']: [{'path': '/instance_uuid', 'op': 'remove'}]}
    for headers in (MEMBER, ADMIN, READER):
        assert api.patch(ARQS, unbind, headers=headers).status_code == 403
    assert api.get(ARQS + '/' + arq['uuid']).json['state'] == states.BOUND
    assert api.patch(ARQS, unbind, headers=SERVICE).status_code == 202
    assert api.get(ARQS + '/' + arq['uuid']).json['state'] == states.UNBOUND


def test_members_create_and_see_their_project_only(api):
    api.profile()
    [mine] = api.arqs(headers=MEMBER)
    [theirs] = api.arqs(headers=OTHER_MEMBER)
    assert (
        api.post(
            ARQS, {'device_profile_name': 'fpga-1'}, headers=READER
        ).status_code
        == 403
    )
    listed = api.get(ARQS, headers=MEMBER).json['arqs']
    assert [a['uuid'] for a in listed] == [mine['uuid']]
    listed = api.get(ARQS, headers=READER).json['arqs']
    assert [a['uuid'] for a in listed] == [mine['uuid']]
    assert (
        api.get(ARQS + '/' + mine['uuid'], headers=MEMBER).status_code == 200
    )
    assert (
        api.get(ARQS + '/' + theirs['uuid'], headers=MEMBER).status_code == 404
    )
    assert len(api.get(ARQS, headers=SERVICE).json['arqs']) == 2
    assert len(api.get(ARQS, headers=ADMIN).json['arqs']) == 2
    # A member deletes their own by uuid, not another project's.
    assert (
        api.delete(
            ARQS, params={'arqs': theirs['uuid']}, headers=MEMBER
        ).status_code
        == 404
    )
    assert (
        api.delete(
            ARQS, params={'arqs': mine['uuid']}, headers=MEMBER
        ).status_code
        == 204
    )
    assert [a['uuid'] for a in api.get(ARQS).json['arqs']] == [theirs['uuid']]
