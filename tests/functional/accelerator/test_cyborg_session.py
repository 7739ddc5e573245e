"""A client session against the accelerator API, step by step, as Cyborg
17's API reference and python-cyborgclient (openstacksdk) speak it: every
route, its statuses and microversions, the status and the JSON key set of
each answer, and the version range on every answer.

One run is one session on one database (the steps depend on each other);
a failing step names itself. The expectations are Cyborg's, except where
Cyborg answers 500 (there Nimbus keeps a 4xx; README, Accelerators).
"""

import orjson

from nimbus.accelerator import states
from tests.functional.accelerator.conftest import ADMIN
from tests.functional.accelerator.conftest import DEVICE_KEYS
from tests.functional.accelerator.conftest import HOST
from tests.functional.accelerator.conftest import MEMBER
from tests.functional.accelerator.conftest import SERVICE

# python-cyborgclient talks to Nimbus with these (the conductor's noauth2
# headers: both roles)
NOVA = {'X-Auth-Token': 'nimbus:service', 'X-Roles': 'admin,service'}
ROOT_KEYS = {'name', 'description', 'versions', 'default_version'}
VERSION_KEYS = {'id', 'status', 'min_version', 'max_version', 'links'}
DP_KEYS = {
    'uuid',
    'name',
    'description',
    'groups',
    'links',
    'created_at',
    'updated_at',
}
ARQ_KEYS = {
    'uuid',
    'state',
    'device_profile_name',
    'device_profile_group_id',
    'hostname',
    'device_rp_uuid',
    'instance_uuid',
    'project_id',
    'attach_handle_type',
    'attach_handle_uuid',
    'attach_handle_info',
    'links',
    'created_at',
    'updated_at',
}
DEPLOYABLE_KEYS = {
    'uuid',
    'parent_id',
    'root_id',
    'name',
    'num_accelerators',
    'device_id',
    'attributes_list',
    'rp_uuid',
    'driver_name',
    'bitstream_id',
    'links',
    'created_at',
    'updated_at',
}
ATTRIBUTE_KEYS = {
    'uuid',
    'deployable_id',
    'key',
    'value',
    'links',
    'created_at',
    'updated_at',
}
ERROR_KEYS = {'error_message'}
DEVICE0 = '11111111-0000-4000-8000-000000000000'
DEPLOYABLE0 = '22222222-0000-4000-8000-000000000000'
RP0 = '33333333-0000-4000-8000-000000000000'
RP1 = '33333333-0000-4000-8000-000000000001'
UNKNOWN = '5d5ba3b9-2d58-4ac9-8b3d-2b7c8b0f5a11'
INSTANCE_A = '6a9d8e39-3d1f-4d5c-9a55-00000000000a'
INSTANCE_B = '6a9d8e39-3d1f-4d5c-9a55-00000000000b'


def _bind_ops(rp, instance):
    # python-cyborgclient's `arq bind` (args_array_to_patch('add', ...))
    return [
        {'op': 'add', 'path': '/hostname', 'value': HOST},
        {'op': 'add', 'path': '/instance_uuid', 'value': instance},
        {'op': 'add', 'path': '/device_rp_uuid', 'value': rp},
    ]


# python-cyborgclient's `arq unbind`
UNBIND_OPS = [
    {'path': '/hostname', 'op': 'remove'},
    {'path': '/instance_uuid', 'op': 'remove'},
    {'path': '/device_rp_uuid', 'op': 'remove'},
]


class Session:
    def __init__(self, api):
        self.api = api
        self.steps = 0
        self.problems = []

    def step(
        self,
        name,
        method,
        path,
        status,
        keys=None,
        headers=ADMIN,
        body=None,
        version=None,
        raw_version=None,
        item=None,
    ):
        """One request; ``keys``: the answer's key set (of ``item``, a
        key of a collection, its first element, when given)."""
        self.steps += 1
        headers = dict(headers)
        if raw_version is not None:
            headers['OpenStack-API-Version'] = raw_version
        if body is not None:
            headers['Content-Type'] = 'application/json'
        response = self.api.request(
            method,
            path,
            headers=headers,
            version=version,
            body=None if body is None else body,
        )
        where = '%d %s: %s %s' % (self.steps, name, method, path)
        if response.status_code != status:
            self.problems.append(
                '%s: %s, expected %s: %s'
                % (where, response.status_code, status, response.text[:200])
            )
            return None
        for header, value in (
            ('OpenStack-API-Minimum-Version', '2.0'),
            ('OpenStack-API-Maximum-Version', '2.3'),
        ):
            if response.headers.get(header) != value:
                self.problems.append('%s: %s is missing' % (where, header))
        payload = response.json if response.text else None
        if status >= 400:
            keys = ERROR_KEYS
        if keys is not None:
            shown = payload
            if item is not None:
                shown = (payload[item] or [{}])[0]
            if set(shown) != keys:
                self.problems.append(
                    '%s: keys %s, expected %s'
                    % (where, sorted(shown), sorted(keys))
                )
        return payload


def test_a_whole_client_session(api):
    s = Session(api)
    # --- discovery and versions --------------------------------------------
    s.step('root', 'GET', '/', 200, ROOT_KEYS, headers={})
    s.step('v2', 'GET', '/v2', 200, VERSION_KEYS, headers={})
    s.step('v2 slash', 'GET', '/v2/', 200, VERSION_KEYS, headers={})
    s.step('prefixed', 'GET', '/accelerator/v2/', 200, headers={})
    for version in ('2.0', '2.1', '2.2', '2.3', 'latest'):
        s.step(
            'version ' + version,
            'GET',
            '/v2/device_profiles',
            200,
            {'device_profiles'},
            version=version,
        )
    for header in (
        'accelerator foo',
        'accelerator 2.4',
        'accelerator 1.0',
        'compute 2.1',
        'foo',
    ):
        s.step(
            'refused version header %r' % header,
            'GET',
            '/v2/device_profiles',
            406,
            raw_version=header,
        )
    s.step('bare version', 'GET', '/v2/devices', 200, raw_version='2.3')
    s.step('no token', 'GET', '/v2/device_profiles', 401, headers={})
    s.step('unknown route', 'GET', '/v2/nothing', 404)
    s.step('wrong method', 'PUT', '/v2/accelerator_requests', 405)

    # --- device profiles -----------------------------------------------------
    profile = [{'name': 'fpga', 'groups': [{'resources:FPGA': '1'}]}]
    created = s.step(
        'create profile',
        'POST',
        '/v2/device_profiles',
        201,
        DP_KEYS,
        body=profile,
    )
    s.step(
        'create profile as a member',
        'POST',
        '/v2/device_profiles',
        403,
        headers=MEMBER,
        body=[{'name': 'x', 'groups': [{'resources:FPGA': '1'}]}],
    )
    s.step(
        'bare object',
        'POST',
        '/v2/device_profiles',
        400,
        body={'name': 'bare', 'groups': [{'resources:FPGA': '1'}]},
    )
    s.step('duplicate', 'POST', '/v2/device_profiles', 409, body=profile)
    s.step(
        'bad group key',
        'POST',
        '/v2/device_profiles',
        400,
        body=[{'name': 'bad', 'groups': [{'resources:FPGA': 'x'}]}],
    )
    s.step(
        'list profiles',
        'GET',
        '/v2/device_profiles',
        200,
        DP_KEYS,
        headers=MEMBER,
        item='device_profiles',
    )
    s.step('list by name', 'GET', '/v2/device_profiles?name=fpga', 200)
    if created:
        s.step(
            'show by uuid',
            'GET',
            '/v2/device_profiles/' + created['uuid'],
            200,
            {'device_profile'},
        )
    s.step('show by name at 2.0', 'GET', '/v2/device_profiles/fpga', 406)
    s.step(
        'show by name at 2.2',
        'GET',
        '/v2/device_profiles/fpga',
        200,
        {'device_profile'},
        version='2.2',
    )
    s.step(
        'show unknown',
        'GET',
        '/v2/device_profiles/' + UNKNOWN,
        404,
        version='2.2',
    )

    # --- accelerator requests ------------------------------------------------
    arqs = []
    for _ in range(3):
        made = s.step(
            'create ARQ',
            'POST',
            '/v2/accelerator_requests',
            201,
            ARQ_KEYS,
            headers=MEMBER,
            body={'device_profile_name': 'fpga'},
            item='arqs',
        )
        arqs.append(made['arqs'][0]['uuid'] if made else UNKNOWN)
    first, second, third = arqs
    s.step(
        'create ARQ of an unknown profile',
        'POST',
        '/v2/accelerator_requests',
        404,
        headers=MEMBER,
        body={'device_profile_name': 'nope'},
    )
    s.step(
        'create ARQ without a profile',
        'POST',
        '/v2/accelerator_requests',
        400,
        headers=MEMBER,
        body={},
    )
    for version in ('2.0', '2.1', '2.2', '2.3'):
        s.step(
            'show ARQ at ' + version,
            'GET',
            '/v2/accelerator_requests/' + first,
            200,
            ARQ_KEYS,
            headers=MEMBER,
            version=version,
        )
    s.step(
        'list ARQs',
        'GET',
        '/v2/accelerator_requests',
        200,
        ARQ_KEYS,
        headers=MEMBER,
        item='arqs',
    )
    s.step('malformed ARQ uuid', 'GET', '/v2/accelerator_requests/nope', 400)
    s.step('unknown ARQ', 'GET', '/v2/accelerator_requests/' + UNKNOWN, 404)

    # bind: the service role only; Cyborg's validations
    bind = {first: _bind_ops(RP0, INSTANCE_A)}
    for who, headers in (('member', MEMBER), ('admin', ADMIN)):
        s.step(
            'bind as ' + who,
            'PATCH',
            '/v2/accelerator_requests',
            403,
            headers=headers,
            body=bind,
        )
    s.step(
        'bind to an unknown provider',
        'PATCH',
        '/v2/accelerator_requests',
        404,
        headers=SERVICE,
        body={first: _bind_ops(UNKNOWN, INSTANCE_A)},
    )
    s.step(
        'bind with a malformed uuid',
        'PATCH',
        '/v2/accelerator_requests',
        400,
        headers=SERVICE,
        body={first: _bind_ops('nope', INSTANCE_A)},
    )
    s.step(
        'bind',
        'PATCH',
        '/v2/accelerator_requests',
        202,
        headers=SERVICE,
        body=bind,
    )
    s.step(
        'bind another ARQ to the same instance',
        'PATCH',
        '/v2/accelerator_requests',
        400,
        headers=SERVICE,
        body={second: _bind_ops(RP0, INSTANCE_A)},
    )
    s.step(
        'resolved while binding',
        'GET',
        '/v2/accelerator_requests?instance=%s&bind_state=resolved'
        % INSTANCE_A,
        423,
        headers=SERVICE,
    )
    api.bind_pass()
    s.step(
        'resolved',
        'GET',
        '/v2/accelerator_requests?instance=%s&bind_state=resolved'
        % INSTANCE_A,
        200,
        ARQ_KEYS,
        headers=SERVICE,
        item='arqs',
    )
    # openstacksdk's form: PATCH /{uuid} with {uuid: ops}
    s.step(
        'sdk bind',
        'PATCH',
        '/v2/accelerator_requests/' + second,
        202,
        headers=NOVA,
        body={second: _bind_ops(RP0, INSTANCE_B)},
    )
    s.step(
        'sdk bind of another uuid',
        'PATCH',
        '/v2/accelerator_requests/' + second,
        400,
        headers=NOVA,
        body={third: _bind_ops(RP0, INSTANCE_B)},
    )
    api.bind_pass()
    bound = s.step(
        'show bound',
        'GET',
        '/v2/accelerator_requests/' + second,
        200,
        ARQ_KEYS,
    )
    if bound and bound['state'] != states.BOUND:
        s.problems.append('second ARQ is %s, not Bound' % bound['state'])

    # deleting a bound ARQ: the service's; all or none
    for who, headers in (('member', MEMBER), ('admin', ADMIN)):
        s.step(
            'delete a bound ARQ as ' + who,
            'DELETE',
            '/v2/accelerator_requests?arqs=' + first,
            403,
            headers=headers,
        )
    s.step(
        'delete a known and an unknown ARQ',
        'DELETE',
        '/v2/accelerator_requests?arqs=%s,%s' % (third, UNKNOWN),
        404,
        headers=MEMBER,
    )
    s.step(
        'the known one is still there',
        'GET',
        '/v2/accelerator_requests/' + third,
        200,
        headers=MEMBER,
    )
    s.step(
        'delete a malformed uuid',
        'DELETE',
        '/v2/accelerator_requests?arqs=nope',
        400,
        headers=MEMBER,
    )
    s.step(
        'delete with both parameters',
        'DELETE',
        '/v2/accelerator_requests?arqs=%s&instance=%s' % (third, INSTANCE_A),
        400,
        headers=SERVICE,
    )
    s.step(
        'sdk unbind as admin',
        'PATCH',
        '/v2/accelerator_requests/' + second,
        403,
        body={second: UNBIND_OPS},
    )
    s.step(
        'sdk unbind',
        'PATCH',
        '/v2/accelerator_requests/' + second,
        202,
        headers=NOVA,
        body={second: UNBIND_OPS},
    )
    s.step(
        'delete the unbound ARQs as their member',
        'DELETE',
        '/v2/accelerator_requests?arqs=%s,%s' % (second, third),
        204,
        headers=MEMBER,
    )
    s.step(
        'delete by instance as admin',
        'DELETE',
        '/v2/accelerator_requests?instance=' + INSTANCE_A,
        403,
    )
    s.step(
        'delete by instance',
        'DELETE',
        '/v2/accelerator_requests?instance=' + INSTANCE_A,
        204,
        headers=SERVICE,
    )
    s.step(
        'delete by instance again',
        'DELETE',
        '/v2/accelerator_requests?instance=' + INSTANCE_A,
        204,
        headers=SERVICE,
    )
    s.step(
        'nothing left',
        'GET',
        '/v2/accelerator_requests?instance=' + INSTANCE_A,
        200,
        {'arqs'},
        headers=SERVICE,
    )

    # --- devices, deployables, attributes ------------------------------------
    s.step('devices', 'GET', '/v2/devices', 200, DEVICE_KEYS, item='devices')
    s.step('device', 'GET', '/v2/devices/' + DEVICE0, 200, DEVICE_KEYS)
    s.step(
        'device at 2.3',
        'GET',
        '/v2/devices/' + DEVICE0,
        200,
        DEVICE_KEYS | {'status'},
        version='2.3',
    )
    s.step('devices as a member', 'GET', '/v2/devices', 403, headers=MEMBER)
    s.step('malformed device uuid', 'GET', '/v2/devices/nope', 400)
    s.step(
        'deployables',
        'GET',
        '/v2/deployables',
        200,
        DEPLOYABLE_KEYS,
        item='deployables',
    )
    s.step('unknown deployable', 'GET', '/v2/deployables/' + UNKNOWN, 404)
    attribute = s.step(
        'create attribute',
        'POST',
        '/v2/attributes',
        201,
        ATTRIBUTE_KEYS,
        body={'deployable_id': 1, 'key': 'rc', 'value': 'FPGA'},
    )
    s.step(
        'attribute of an unknown deployable',
        'POST',
        '/v2/attributes',
        400,
        body={'deployable_id': 999, 'key': 'rc', 'value': 'FPGA'},
    )
    s.step(
        'attribute without a key',
        'POST',
        '/v2/attributes',
        400,
        body={'deployable_id': 1, 'value': 'FPGA'},
    )
    s.step(
        'attributes',
        'GET',
        '/v2/attributes?deployable_id=1&key=rc',
        200,
        ATTRIBUTE_KEYS,
        item='attributes',
    )
    s.step(
        'attributes as a member', 'GET', '/v2/attributes', 403, headers=MEMBER
    )
    shown = s.step(
        'deployable with its attributes',
        'GET',
        '/v2/deployables/' + DEPLOYABLE0,
        200,
        DEPLOYABLE_KEYS,
    )
    if shown and orjson.loads(shown['attributes_list']) != [{'rc': 'FPGA'}]:
        s.problems.append('attributes_list is %r' % shown['attributes_list'])
    uuid = attribute['uuid'] if attribute else UNKNOWN
    s.step('attribute', 'GET', '/v2/attributes/' + uuid, 200, ATTRIBUTE_KEYS)
    s.step('malformed attribute uuid', 'GET', '/v2/attributes/nope', 400)
    s.step('delete attribute', 'DELETE', '/v2/attributes/' + uuid, 204)
    s.step('deleted attribute', 'GET', '/v2/attributes/' + uuid, 404)

    # --- the profile's end ---------------------------------------------------
    if created:
        s.step(
            'delete profile',
            'DELETE',
            '/v2/device_profiles/' + created['uuid'],
            204,
        )
    s.step(
        'delete by unknown name', 'DELETE', '/v2/device_profiles?value=x', 404
    )
    assert s.problems == [], '\n'.join(s.problems)
    assert s.steps >= 80
