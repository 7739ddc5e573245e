"""Server actions across the daemons on RabbitMQ and MariaDB: each service
its own process, the compute's casts and the cell conductor's calls on a
real broker. The compute is killed with SIGKILL and an action sent while
it is down waits in its queue: the server ends in the action's state once
the compute is back."""

import pytest

from nimbus.allinone.client import ComputeClient
from nimbus.testing import daemons

pytestmark = pytest.mark.integration

HOST = 'host-1'


def _wait(predicate, what, cloud, timeout=90):
    return daemons.wait_for(
        predicate, timeout, what, list(cloud.daemons.values())
    )


def _status(api, uuid):
    server = api.server(uuid)
    return server['status'], server['OS-EXT-STS:task_state']


def test_actions_over_rabbitmq_and_a_compute_killed_meanwhile(tmp_path, fresh):
    databases = {
        name: fresh.database('mysql')
        for name in ('api', 'cell0', 'cell1', 'placement')
    }
    cloud = daemons.DaemonCloud(
        str(tmp_path / 'cloud'),
        fresh.vhost(),
        fresh.vhost(),
        databases,
        hosts=1,
        common_options={'compute': {'update_resources_interval': 2}},
    )
    cloud.prepare()
    try:
        cloud.start()
        api = ComputeClient(cloud.api_url, microversion='2.84')
        _wait(
            lambda: any(
                h.get('state') == 'up'
                for h in api.get('/os-hypervisors/detail')['hypervisors']
            ),
            'the compute to report',
            cloud,
        )
        cloud.manage('cell', 'discover-hosts')
        flavor = api.create_flavor('m1.tiny', 1, 512, 1)
        image = api.create_image('cirros')
        uuid = api.create_server('vm', flavor['id'], image['id'])['server'][
            'id'
        ]
        _wait(lambda: _status(api, uuid) == ('ACTIVE', None), 'ACTIVE', cloud)
        for body, status in (
            ({'os-stop': None}, 'SHUTOFF'),
            ({'os-start': None}, 'ACTIVE'),
            ({'reboot': {'type': 'HARD'}}, 'ACTIVE'),
            ({'pause': None}, 'PAUSED'),
            ({'unpause': None}, 'ACTIVE'),
        ):
            api.post('/servers/%s/action' % uuid, body)
            _wait(
                lambda status=status: _status(api, uuid) == (status, None),
                status,
                cloud,
            )

        cloud.daemons[HOST].kill9()
        api.post('/servers/%s/action' % uuid, {'os-stop': None})
        assert _status(api, uuid) == ('ACTIVE', 'powering-off')
        cloud.start_compute(HOST)
        _wait(
            lambda: _status(api, uuid) == ('SHUTOFF', None),
            'SHUTOFF after the restart',
            cloud,
        )
        actions = api.get('/servers/%s/os-instance-actions' % uuid)[
            'instanceActions'
        ]
        assert [a['action'] for a in actions] == [
            'stop',
            'unpause',
            'pause',
            'reboot',
            'start',
            'stop',
            'create',
        ]
        last = api.get(
            '/servers/%s/os-instance-actions/%s'
            % (uuid, actions[0]['request_id'])
        )['instanceAction']
        assert [(e['event'], e['result']) for e in last['events']] == [
            ('compute_stop_instance', 'Success')
        ]
        assert last['events'][0]['host'] == HOST
    finally:
        cloud.stop()
