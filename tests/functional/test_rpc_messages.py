"""Malformed RPC messages: a call gets an error back, a cast is logged and
dropped, and the service keeps serving.

Each case sends one malformed message through a real oslo.messaging client
on the in-process bus of a running all-in-one cloud (every service real,
SQLite): wrong types, missing or unknown arguments, unknown methods,
garbage request specs and host lists. Then a valid message must work:

- a call must fail with an error reply, well before its timeout (a
  ``MessagingTimeout`` is a hang, not an answer), and that error must be
  the endpoint's ``InvalidMessage`` (oslo.messaging's ``NoSuchMethod`` for
  an unknown method), not an exception of the domain code;
- a cast must leave a log record made while handling that message (found
  by the request id of the context it carried, or for an unknown method by
  the method name in oslo.messaging's error), and have no effect;
- afterwards the service answers a valid call, or (for the casting
  services) a server forced onto host-1 still boots to ACTIVE, which needs
  the super conductor, the scheduler, the cell conductor and host-1's
  compute to be serving.
"""

import json
import logging
import os
import time
import uuid

from oslo_context import context as oslo_context
import oslo_messaging as messaging
import pytest
import requests

from nimbus.allinone import client as client_mod
from nimbus.allinone import cloud as cloud_mod
from nimbus.common import context as nimbus_context
from nimbus.common import rpc
from nimbus.messaging_internals import inproc

CALL_TIMEOUT = 15
VALID_SPEC = {
    'flavor': {
        'name': 'm1.tiny',
        'flavorid': '1',
        'vcpus': 1,
        'memory_mb': 512,
        'root_gb': 1,
    },
    'num_instances': 1,
    'project_id': 'p',
    'user_id': 'u',
}
SELECTION = {
    'service_host': 'host-1',
    'nodename': 'host-1',
    'allocation_request': {'allocations': {}},
}


class Recorder(logging.Handler):
    """Every log record with the request id of the thread's context at the
    moment it was logged (what oslo.log would print in its brackets)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        current = oslo_context.get_current()
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += ' | %r' % (record.exc_info[1],)
        self.records.append(
            (
                getattr(current, 'request_id', None),
                record.levelno,
                record.name,
                text,
            )
        )

    def about(self, request_id, token=None):
        return [
            r
            for r in list(self.records)
            if r[0] == request_id or (token and token in r[3])
        ]


@pytest.fixture(scope='module')
def cloud(tmp_path_factory):
    tag = uuid.uuid4().hex[:8]
    cloud = cloud_mod.Cloud(
        str(tmp_path_factory.mktemp('rpc-messages')),
        hosts=2,
        transport_url='inproc:///rpcmsg-%s-api' % tag,
        cell_transport_url='inproc:///rpcmsg-%s-cell1' % tag,
        overrides={'DEFAULT': {'report_interval': 1}},
    )
    cloud.start()
    cloud.api = client_mod.ComputeClient(cloud.api_url)
    cloud.flavor = cloud.api.create_flavor('m1.tiny', 1, 512, 1)
    cloud.image = cloud.api.create_image('cirros')
    yield cloud
    cloud.stop()
    inproc.reset_buses()


@pytest.fixture
def recorder(cloud):
    handler = Recorder()
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield handler
    root.removeHandler(handler)
    root.setLevel(old_level)


def _client(cloud, bus, topic, server=None, fanout=False):
    url = cloud.transport_url if bus == 'api' else cloud.cell_transport_url
    transport = rpc.get_transport(cloud.conf, url)
    return rpc.get_client(transport, topic, '1.0', server=server).prepare(
        timeout=CALL_TIMEOUT, fanout=fanout
    )


def _ctxt():
    return nimbus_context.RequestContext(
        user_id='u',
        project_id='p',
        roles=['admin'],
        is_admin=True,
        overwrite=False,
    )


def _boots_on_host1(cloud):
    server = cloud.api.create_server(
        'probe-%s' % uuid.uuid4().hex[:6],
        cloud.flavor['id'],
        cloud.image['id'],
        availability_zone='nova:host-1',
    )['server']
    final = cloud_mod.wait_for(
        lambda: (lambda s: s if s['status'] != 'BUILD' else None)(
            cloud.api.server(server['id'])
        ),
        timeout=60,
        what='a probe',
    )
    assert final['status'] == 'ACTIVE', final.get('fault')
    assert final['OS-EXT-SRV-ATTR:host'] == 'host-1'


def _still_serving(cloud, bus, topic, server):
    """A valid message to the same service works."""
    ctxt = _ctxt()
    if topic == 'scheduler':
        result = _client(cloud, bus, topic).call(
            ctxt, 'dry_run', request_spec=VALID_SPEC
        )
        assert result
    elif topic == 'conductor' and bus == 'cell':
        result = _client(cloud, bus, topic).call(
            ctxt, 'instances_on_host', host='host-1'
        )
        assert isinstance(result, list)
        _boots_on_host1(cloud)
    else:
        _boots_on_host1(cloud)


NO_SUCH = 'no_such_method_%s' % uuid.uuid4().hex[:8]

# (bus, topic, server, method, kwargs); calls must answer with an error.
CALLS = {
    'select_destinations-missing-spec': (
        'api',
        'scheduler',
        None,
        'select_destinations',
        {},
    ),
    'select_destinations-spec-is-a-string': (
        'api',
        'scheduler',
        None,
        'select_destinations',
        {'request_spec': 'garbage', 'instance_uuids': []},
    ),
    'select_destinations-spec-is-a-list': (
        'api',
        'scheduler',
        None,
        'select_destinations',
        {'request_spec': [1, 2], 'instance_uuids': []},
    ),
    'select_destinations-flavor-is-a-string': (
        'api',
        'scheduler',
        None,
        'select_destinations',
        {'request_spec': {'flavor': 'm1.tiny'}},
    ),
    'select_destinations-vcpus-not-a-number': (
        'api',
        'scheduler',
        None,
        'select_destinations',
        {
            'request_spec': dict(
                VALID_SPEC, flavor=dict(VALID_SPEC['flavor'], vcpus='many')
            )
        },
    ),
    'select_destinations-extra-specs-garbage': (
        'api',
        'scheduler',
        None,
        'select_destinations',
        {
            'request_spec': dict(
                VALID_SPEC,
                flavor=dict(VALID_SPEC['flavor'], extra_specs='garbage'),
            )
        },
    ),
    'select_destinations-image-is-a-string': (
        'api',
        'scheduler',
        None,
        'select_destinations',
        {'request_spec': dict(VALID_SPEC, image='cirros')},
    ),
    'select_destinations-uuids-not-a-list': (
        'api',
        'scheduler',
        None,
        'select_destinations',
        {'request_spec': VALID_SPEC, 'instance_uuids': 'abc'},
    ),
    'select_destinations-unknown-argument': (
        'api',
        'scheduler',
        None,
        'select_destinations',
        {'request_spec': VALID_SPEC, 'bogus': 1},
    ),
    'dry_run-missing-spec': ('api', 'scheduler', None, 'dry_run', {}),
    'dry_run-spec-is-a-number': (
        'api',
        'scheduler',
        None,
        'dry_run',
        {'request_spec': 42},
    ),
    'dry_run-hints-are-a-string': (
        'api',
        'scheduler',
        None,
        'dry_run',
        {'request_spec': dict(VALID_SPEC, scheduler_hints='garbage')},
    ),
    'scheduler-unknown-method': ('api', 'scheduler', None, NO_SUCH, {}),
    'instance_update-missing-updates': (
        'cell',
        'conductor',
        None,
        'instance_update',
        {
            'instance_uuid': str(uuid.uuid4()),
            'expected_vm_states': ['building'],
        },
    ),
    'instance_update-updates-is-a-string': (
        'cell',
        'conductor',
        None,
        'instance_update',
        {
            'instance_uuid': str(uuid.uuid4()),
            'expected_vm_states': ['building'],
            'updates': 'garbage',
        },
    ),
    'instance_update-unknown-column': (
        'cell',
        'conductor',
        None,
        'instance_update',
        {
            'instance_uuid': str(uuid.uuid4()),
            'expected_vm_states': ['building'],
            'updates': {'bogus': 1},
        },
    ),
    'instance_update-states-is-a-string': (
        'cell',
        'conductor',
        None,
        'instance_update',
        {
            'instance_uuid': str(uuid.uuid4()),
            'expected_vm_states': 'building',
            'updates': {'task_state': None},
        },
    ),
    'record_build_attempt-missing-result': (
        'cell',
        'conductor',
        None,
        'record_build_attempt',
        {
            'instance_uuid': str(uuid.uuid4()),
            'host': 'host-1',
            'node': 'host-1',
        },
    ),
    'service_heartbeat-missing-binary': (
        'cell',
        'conductor',
        None,
        'service_heartbeat',
        {'host': 'host-1'},
    ),
    'service_heartbeats-hosts-not-a-list': (
        'cell',
        'conductor',
        None,
        'service_heartbeats',
        {'heartbeats': {'binary': 'nimbus-compute', 'hosts': 'host-1'}},
    ),
    'service_heartbeats-newer-major-version': (
        'cell',
        'conductor',
        None,
        'service_heartbeats',
        {
            'heartbeats': {
                'nimbus_object.version': '2.0',
                'binary': 'nimbus-compute',
                'hosts': ['host-1'],
            }
        },
    ),
    'compute_node_update-node-is-a-string': (
        'cell',
        'conductor',
        None,
        'compute_node_update',
        {'node': 'x'},
    ),
    'compute_node_update-node-without-host': (
        'cell',
        'conductor',
        None,
        'compute_node_update',
        {'node': {'uuid': str(uuid.uuid4())}},
    ),
    'instances_on_host-unknown-argument': (
        'cell',
        'conductor',
        None,
        'instances_on_host',
        {'host': 'host-1', 'bogus': True},
    ),
    'service_disable-missing-reason': (
        'cell',
        'conductor',
        None,
        'service_disable',
        {'host': 'host-1', 'binary': 'nimbus-compute'},
    ),
    'service_disable-reason-is-a-number': (
        'cell',
        'conductor',
        None,
        'service_disable',
        {'host': 'host-1', 'binary': 'nimbus-compute', 'reason': 3},
    ),
    'group_members-missing-group': (
        'cell',
        'conductor',
        None,
        'group_members',
        {'exclude': 'x'},
    ),
    'group_members-group-is-a-list': (
        'cell',
        'conductor',
        None,
        'group_members',
        {'group_uuid': ['g']},
    ),
    'instance_update-unknown-task-state': (
        'cell',
        'conductor',
        None,
        'instance_update',
        {
            'instance_uuid': str(uuid.uuid4()),
            'expected_vm_states': ['active'],
            'updates': {'task_state': None},
            'expected_task_states': ['teleporting'],
        },
    ),
    'instance_action_event-event-is-a-string': (
        'cell',
        'conductor',
        None,
        'instance_action_event',
        {'event': 'garbage'},
    ),
    'instance_action_event-finish-without-result': (
        'cell',
        'conductor',
        None,
        'instance_action_event',
        {
            'event': {
                'instance_uuid': str(uuid.uuid4()),
                'request_id': 'req-1',
                'event': 'compute_stop_instance',
                'host': 'host-1',
                'phase': 'finish',
                'time': '2026-11-28T16:00:00',
            }
        },
    ),
    'reclaimable-negative-seconds': (
        'cell',
        'conductor',
        None,
        'reclaimable',
        {'host': 'host-1', 'seconds': -1},
    ),
    'get_console_output-length-is-a-string': (
        'cell',
        'compute',
        'host-1',
        'get_console_output',
        {'instance_uuid': str(uuid.uuid4()), 'length': 'ten'},
    ),
    'get_diagnostics-missing-uuid': (
        'cell',
        'compute',
        'host-1',
        'get_diagnostics',
        {},
    ),
    'cell-conductor-unknown-method': ('cell', 'conductor', None, NO_SUCH, {}),
}

# Known failures: the case id -> why (each flips to a failure when fixed).
CALL_XFAIL = {}


def _marked(cases, xfails):
    return [
        pytest.param(
            name, marks=pytest.mark.xfail(strict=True, reason=xfails[name])
        )
        if name in xfails
        else name
        for name in cases
    ]


@pytest.mark.matrix
@pytest.mark.parametrize('case', _marked(CALLS, CALL_XFAIL))
def test_malformed_call_gets_an_error_back(cloud, recorder, case):
    bus, topic, server, method, kwargs = CALLS[case]
    client = _client(cloud, bus, topic, server)
    started = time.monotonic()
    with pytest.raises(Exception) as info:
        client.call(_ctxt(), method, **kwargs)
    assert not isinstance(info.value, messaging.MessagingTimeout), (
        'no answer in %.0f s' % (time.monotonic() - started)
    )
    _still_serving(cloud, bus, topic, server)
    # The error names the problem: oslo.messaging's NoSuchMethod for an
    # unknown method, else the endpoint's InvalidMessage (nimbus.common.rpc
    # ``expose``), not whatever the domain code tripped over.
    if method == NO_SUCH:
        assert isinstance(info.value, messaging.RemoteError)
        assert info.value.exc_type == 'NoSuchMethod', info.value
    else:
        assert isinstance(info.value, rpc.InvalidMessage), repr(info.value)


def _instance():
    return {
        'uuid': str(uuid.uuid4()),
        'vm_state': 'building',
        'display_name': 'ghost',
    }


CASTS = {
    'schedule_and_build_instances-missing-uuids': (
        'api',
        'conductor',
        None,
        'schedule_and_build_instances',
        {'request_spec': VALID_SPEC},
    ),
    'schedule_and_build_instances-spec-is-a-string': (
        'api',
        'conductor',
        None,
        'schedule_and_build_instances',
        {'request_spec': 'garbage', 'instance_uuids': [str(uuid.uuid4())]},
    ),
    'schedule_and_build_instances-uuids-is-a-string': (
        'api',
        'conductor',
        None,
        'schedule_and_build_instances',
        {'request_spec': VALID_SPEC, 'instance_uuids': 'abc'},
    ),
    'schedule_and_build_instances-garbage-spec-unknown-uuid': (
        'api',
        'conductor',
        None,
        'schedule_and_build_instances',
        {
            'request_spec': {'flavor': 'x', 'num_instances': 'many'},
            'instance_uuids': [str(uuid.uuid4())],
        },
    ),
    'schedule_and_build_instances-unknown-argument': (
        'api',
        'conductor',
        None,
        'schedule_and_build_instances',
        {'request_spec': VALID_SPEC, 'instance_uuids': [], 'bogus': 1},
    ),
    'super-conductor-unknown-method': ('api', 'conductor', None, NO_SUCH, {}),
    'update_instance_info-garbage': (
        'api',
        'scheduler',
        'fanout',
        'update_instance_info',
        {'host_name': 'host-1', 'instance_info': 'garbage'},
    ),
    'update_aggregates-garbage': (
        'api',
        'scheduler',
        'fanout',
        'update_aggregates',
        {'aggregates': 'garbage'},
    ),
    'update_aggregates-records-not-dicts': (
        'api',
        'scheduler',
        'fanout',
        'update_aggregates',
        {'aggregates': ['garbage', 7]},
    ),
    'update_instance_info-record-without-uuid': (
        'api',
        'scheduler',
        'fanout',
        'update_instance_info',
        {'host_name': 'host-1', 'instance_info': [{'flavor_id': '1'}]},
    ),
    'sync_instance_info-uuids-are-numbers': (
        'api',
        'scheduler',
        'fanout',
        'sync_instance_info',
        {'host_name': 'host-1', 'instance_uuids': [1, 2]},
    ),
    'update_service-without-host': (
        'api',
        'scheduler',
        'fanout',
        'update_service',
        {'service': {'binary': 'nimbus-compute'}},
    ),
    'update_server_group-without-uuid': (
        'api',
        'scheduler',
        'fanout',
        'update_server_group',
        {'group': {'policy': 'affinity'}},
    ),
    'delete_server_group-uuid-is-a-number': (
        'api',
        'scheduler',
        'fanout',
        'delete_server_group',
        {'group_uuid': 42},
    ),
    'build_instances-missing-host-list': (
        'cell',
        'conductor',
        None,
        'build_instances',
        {'instance_uuid': str(uuid.uuid4()), 'request_spec': VALID_SPEC},
    ),
    'build_instances-host-list-is-a-string': (
        'cell',
        'conductor',
        None,
        'build_instances',
        {
            'instance_uuid': str(uuid.uuid4()),
            'request_spec': VALID_SPEC,
            'host_list': 'garbage',
        },
    ),
    'build_instances-selection-without-keys': (
        'cell',
        'conductor',
        None,
        'build_instances',
        {
            'instance_uuid': str(uuid.uuid4()),
            'request_spec': VALID_SPEC,
            'host_list': [{'bogus': 1}],
        },
    ),
    'build_instances-spec-is-a-string': (
        'cell',
        'conductor',
        None,
        'build_instances',
        {
            'instance_uuid': str(uuid.uuid4()),
            'request_spec': 'garbage',
            'host_list': [],
        },
    ),
    'build_and_run_instance-missing-selection': (
        'cell',
        'compute',
        'host-1',
        'build_and_run_instance',
        {'instance': _instance(), 'request_spec': VALID_SPEC},
    ),
    'build_and_run_instance-instance-is-a-string': (
        'cell',
        'compute',
        'host-1',
        'build_and_run_instance',
        {
            'instance': 'garbage',
            'request_spec': VALID_SPEC,
            'selection': SELECTION,
        },
    ),
    'build_and_run_instance-selection-is-a-string': (
        'cell',
        'compute',
        'host-1',
        'build_and_run_instance',
        {
            'instance': _instance(),
            'request_spec': VALID_SPEC,
            'selection': 'garbage',
            'host_list': [],
        },
    ),
    'build_and_run_instance-garbage-spec-unknown-instance': (
        'cell',
        'compute',
        'host-1',
        'build_and_run_instance',
        {
            'instance': _instance(),
            'request_spec': 'garbage',
            'selection': SELECTION,
            'host_list': 'garbage',
        },
    ),
    'build_and_run_instance-unknown-argument': (
        'cell',
        'compute',
        'host-1',
        'build_and_run_instance',
        {
            'instance': _instance(),
            'request_spec': VALID_SPEC,
            'selection': SELECTION,
            'bogus': 1,
        },
    ),
    'external_instance_event-missing-events': (
        'cell',
        'compute',
        'host-1',
        'external_instance_event',
        {'instance_uuid': str(uuid.uuid4())},
    ),
    'external_instance_event-events-is-a-string': (
        'cell',
        'compute',
        'host-1',
        'external_instance_event',
        {'instance_uuid': str(uuid.uuid4()), 'events': 'garbage'},
    ),
    'external_instance_event-events-without-names': (
        'cell',
        'compute',
        'host-1',
        'external_instance_event',
        {'instance_uuid': str(uuid.uuid4()), 'events': [1, {'tag': 'x'}]},
    ),
    'terminate_instance-missing-uuid': (
        'cell',
        'compute',
        'host-1',
        'terminate_instance',
        {},
    ),
    'stop_instance-missing-request-id': (
        'cell',
        'compute',
        'host-1',
        'stop_instance',
        {'instance_uuid': str(uuid.uuid4())},
    ),
    'reboot_instance-warm-reboot': (
        'cell',
        'compute',
        'host-1',
        'reboot_instance',
        {
            'instance_uuid': str(uuid.uuid4()),
            'request_id': 'req-1',
            'reboot_type': 'WARM',
        },
    ),
    'snapshot_instance-missing-image': (
        'cell',
        'compute',
        'host-1',
        'snapshot_instance',
        {'instance_uuid': str(uuid.uuid4()), 'request_id': 'req-1'},
    ),
    'rebuild_instance-image-is-a-number': (
        'cell',
        'compute',
        'host-1',
        'rebuild_instance',
        {
            'instance_uuid': str(uuid.uuid4()),
            'request_id': 'req-1',
            'image_ref': 7,
        },
    ),
    'compute-unknown-method': ('cell', 'compute', 'host-1', NO_SUCH, {}),
}

CAST_XFAIL = {}


@pytest.mark.matrix
@pytest.mark.parametrize('case', _marked(CASTS, CAST_XFAIL))
def test_malformed_cast_is_logged_and_dropped(cloud, recorder, case):
    bus, topic, server, method, kwargs = CASTS[case]
    fanout = server == 'fanout'
    client = _client(cloud, bus, topic, None if fanout else server, fanout)
    ctxt = _ctxt()
    before = {s['id'] for s in cloud.api.servers()}
    client.cast(ctxt, method, **kwargs)
    token = method if method == NO_SUCH else None
    records = cloud_mod.wait_for(
        lambda: [
            r
            for r in recorder.about(ctxt.request_id, token)
            if r[1] >= logging.INFO
        ],
        timeout=CALL_TIMEOUT,
        what='a log record of the dropped %s' % case,
    )
    assert records
    if topic == 'scheduler':
        # Refused at the endpoint, not failed later while applying it.
        assert any('Dropped malformed cast' in r[3] for r in records), records
    # Dropped: nothing was built or recorded for it.
    assert {s['id'] for s in cloud.api.servers()} == before
    _still_serving(cloud, bus, topic, server)
    if isinstance(kwargs.get('instance'), dict):
        # The compute built no guest for the ghost and holds no claim.
        ghost = kwargs['instance']['uuid']
        guests = os.path.join(cloud.state_dir, 'fake-virt', 'host-1.json')
        if os.path.exists(guests):
            with open(guests) as f:
                assert ghost not in json.load(f)
        response = requests.get(
            '%s/allocations/%s' % (cloud.placement_url, ghost),
            headers={'X-Auth-Token': 'admin'},
            timeout=30,
        )
        assert response.json()['allocations'] == {}
