"""``nimbus decisions --follow`` against the daemons on RabbitMQ (issue
22): the daemons declare the ``nimbus`` exchange durable, and the CLI must
declare it the same way (it died with ``PRECONDITION_FAILED - inequivalent
arg 'durable' for exchange 'nimbus'`` when it built a bare ConfigOpts).
Two tails run as their own processes, one given the scheduler's config
file, one only ``--transport-url``; a server is booted and both print its
decision."""

import json
import subprocess
import sys

import amqp
import kombu
import pytest

from nimbus.allinone.client import ComputeClient
from nimbus.common.rpc import backlog
from nimbus.testing import daemons

pytestmark = pytest.mark.integration


def _queue_exists(url, name):
    """A passive declare: True once a tail's pool queue is bound."""
    with kombu.Connection(backlog.broker_urls(url)[0]) as conn:
        try:
            conn.default_channel.queue_declare(queue=name, passive=True)
        except amqp.exceptions.NotFound:
            return False
    return True


def _tail(pool, *args):
    return subprocess.Popen(
        [
            sys.executable,
            '-m',
            'nimbus.cmd.cli',
            'decisions',
            '--follow',
            '--pool',
            pool,
            '--count',
            '1',
            '--format',
            'json',
        ]
        + list(args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def cloud(tmp_path, fresh):
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
        yield cloud
    finally:
        cloud.stop()


def test_follow_prints_the_decision_of_a_boot(cloud):
    procs = []
    everyone = list(cloud.daemons.values())
    try:
        api = ComputeClient(cloud.api_url)
        daemons.wait_for(
            lambda: [
                h
                for h in api.get('/os-hypervisors/detail')['hypervisors']
                if h.get('state') == 'up'
            ],
            60,
            'the compute to report',
            everyone,
        )
        cloud.manage('cell', 'discover-hosts')
        flavor = api.create_flavor('m1.tiny', 1, 512, 1)
        image = api.create_image('cirros')
        scheduler_conf = cloud.daemons['scheduler'].config_file
        procs = [
            _tail('cli-config-file', '--config-file', scheduler_conf),
            _tail('cli-transport-url', '--transport-url', cloud.api_bus),
        ]
        for pool, proc in zip(
            ('cli-config-file', 'cli-transport-url'), procs, strict=False
        ):

            def listening(pool=pool, proc=proc):
                assert proc.poll() is None, proc.communicate()
                return _queue_exists(cloud.api_bus, pool)

            daemons.wait_for(listening, 60, pool + ' listening', everyone)
        server = api.create_server('vm-1', flavor['id'], image['id'])
        uuid = server['server']['id']
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            assert 'PRECONDITION_FAILED' not in err
            (line,) = out.strip().splitlines()
            decision = json.loads(line)
            assert decision['outcome'] == 'scheduled'
            assert decision['flavor']['name'] == 'm1.tiny'
            (instance,) = decision['instances']
            assert instance['instance_uuid'] == uuid
            assert instance['host'] == 'host-1'
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
