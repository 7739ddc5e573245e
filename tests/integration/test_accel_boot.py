"""Servers with accelerators, every daemon its own process on RabbitMQ and
MariaDB: nimbus-api, placement, scheduler, conductors, one nimbus-compute
process simulating two hosts, nimbus-accelerator-api, and one
nimbus-accelerator-agent process serving the same two hosts with one fake
FPGA and two fake GPUs each.

The agents' fake drivers read a control file (hold, fail everywhere, fail
on some hosts), which is how each test steers the binding. Every test ends
with nothing leaked: no ARQ without a live instance, no allocation on a
device provider without a Bound ARQ.

One cloud serves the module; the tests run in file order and each deletes
its servers. The last ones restart the compute with
``[accelerator] reschedule_on_bind_failure = false`` and a short
``arq_binding_timeout``.
"""

import json
import os
import signal
import subprocess
import sys

import pytest

from nimbus.allinone.client import ComputeClient
from nimbus.testing import accel_daemons
from nimbus.testing import daemons
from nimbus.testing import infra

pytestmark = pytest.mark.integration

HOSTS = ['acc-0001', 'acc-0002']
STARTED = 'simulated compute hosts started'
PROFILE = 'fpga-and-gpu'
GROUPS = [
    {'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL': 'required'},
    {'resources:PGPU': '1', 'trait:CUSTOM_GPU_PRODUCT_ID_1EB8': 'required'},
]
COMPUTE = {
    'compute': {'arq_binding_timeout': 120, 'update_resources_interval': 2},
    'simulated_hosts': {'workers': 4, 'rpc_workers': 4},
}


class Env:
    def __init__(self, cloud, api, flavor, image):
        self.cloud = cloud
        self.api = api
        self.flavor = flavor
        self.image = image

    def wait(self, predicate, what, timeout=120):
        return daemons.wait_for(
            predicate, timeout, what, list(self.cloud.daemons.values())
        )

    def boot(self, name):
        return self.api.create_server(
            name, self.flavor['id'], self.image['id']
        )['server']['id']

    def status(self, server_id, *wanted, timeout=180):
        def settled():
            server = self._server(server_id)
            if server is not None and server['status'] in wanted:
                return server
            return None

        return self.wait(
            settled, '%s to be %s' % (server_id, '/'.join(wanted)), timeout
        )

    def _server(self, server_id):
        try:
            return self.api.server(server_id)
        except RuntimeError as exc:
            if ' 404 ' in str(exc):
                return {'status': 'DELETED'}
            raise

    def delete(self, *server_ids):
        for server_id in server_ids:
            self.api.delete('/servers/%s' % server_id)
        for server_id in server_ids:
            self.status(server_id, 'DELETED')

    def arqs_of(self, server_id):
        return [
            a for a in self.cloud.arqs() if a['instance_uuid'] == server_id
        ]

    def binding(self, server_id):
        """The server's ARQs once all are BindStarted (held)."""

        def started():
            arqs = self.arqs_of(server_id)
            if len(arqs) == 2 and all(
                a['state'] == 'BindStarted' for a in arqs
            ):
                return arqs
            return None

        return self.wait(started, 'ARQs of %s binding' % server_id)

    def clean(self, live=()):
        """Wait until nothing leaks (the binder may still be settling)."""
        found = []

        def clean():
            found[:] = accel_daemons.leaks(self.cloud, live)
            return not found

        try:
            self.wait(clean, 'no leaked ARQ or device allocation', 60)
        except AssertionError as exc:
            raise AssertionError('leaks: %s' % found) from exc

    def guest(self, host, server_id):
        path = os.path.join(
            self.cloud.workdir, 'acc', 'fake-virt', '%s.json' % host
        )
        with open(path) as f:
            return json.load(f).get(server_id)

    def log(self, name):
        with open(self.cloud.daemons[name].log_file, errors='replace') as f:
            return f.read()

    def restart_compute(self, options):
        """Restart the compute process with ``options`` and wait until its
        hosts serve again (a build cast before the restarted hosts ran
        their recovery would be failed by it as interrupted)."""
        started = self.log('acc').count(STARTED)
        self.cloud.daemons['acc'].stop()
        merged = {k: dict(v) for k, v in COMPUTE.items()}
        for section, values in options.items():
            merged.setdefault(section, {}).update(values)
        self.cloud.start_simulated('acc', len(HOSTS), merged)
        self.wait(
            lambda: self.log('acc').count(STARTED) > started,
            'the computes started again',
        )
        self.wait(self._hosts_up, 'computes up again')

    def _hosts_up(self):
        hypervisors = self.api.get('/os-hypervisors/detail')['hypervisors']
        return sum(1 for h in hypervisors if h.get('state') == 'up') == len(
            HOSTS
        )


@pytest.fixture(scope='module')
def env(tmp_path_factory):
    cleanups = []
    try:
        api_bus, cleanup = infra.rabbit_vhost()
        cleanups.append(cleanup)
        cell_bus, cleanup = infra.rabbit_vhost()
        cleanups.append(cleanup)
        databases = {}
        for name in ('api', 'cell0', 'cell1', 'placement', 'accelerator'):
            databases[name], cleanup = infra.database('mysql')
            cleanups.append(cleanup)
        cloud = accel_daemons.AccelDaemonCloud(
            str(tmp_path_factory.mktemp('accel') / 'cloud'),
            api_bus,
            cell_bus,
            databases,
            # The compute restart of the last tests must not look like an
            # outage to the scheduler (it would answer no valid host).
            common_options={'DEFAULT': {'service_down_time': 60}},
        )
        cloud.prepare()
        try:
            yield _start(cloud)
        finally:
            cloud.stop()
    finally:
        for cleanup in reversed(cleanups):
            try:
                cleanup()
            except Exception:
                pass


def _start(cloud):
    cloud.start()
    cloud.start_accelerator()
    cloud.wait_log('cell1-conductor', 'Serving topic conductor')
    cloud.start_simulated('acc', len(HOSTS), COMPUTE)
    # One FPGA and two GPUs per host.
    cloud.start_agent('acc', len(HOSTS), {'fake_gpu': {'count': 2}})
    api = ComputeClient(cloud.api_url)
    env = Env(cloud, api, None, None)
    env.wait(env._hosts_up, 'two simulated hosts up')
    cloud.manage('cell', 'discover-hosts')
    env.wait(
        lambda: len(cloud.device_providers()) == 6,
        'six device providers in placement',
    )
    response = cloud.accel(
        'POST', '/device_profiles', json=[{'name': PROFILE, 'groups': GROUPS}]
    )
    assert response.status_code == 201, response.text
    env.flavor = api.create_flavor(
        'accel', 1, 512, 1, {'accel:device_profile': PROFILE}
    )
    env.image = api.create_image('cirros')
    return env


def _providers_by_host(cloud):
    """``{host: {resource class: {device rp uuid, ...}}}``."""
    out = {}
    for rp_uuid, rp in cloud.device_providers().items():
        inventory = cloud.placement(
            '/resource_providers/%s/inventories' % rp_uuid
        )
        host = rp['name'].split('_fake_')[0]
        for rc in inventory['inventories']:
            out.setdefault(host, {}).setdefault(rc, set()).add(rp_uuid)
    return out


def _check_bound(env, server_id):
    """The server is ACTIVE with its two ARQs Bound on its host's FPGA and
    GPU providers (group 0 the FPGA, group 1 the GPU), each on the very
    provider its group was allocated from (placement's mappings: a host
    has two GPUs, so a binder ignoring them would pick the other one about
    half the time), and the guest holding both devices."""
    server = env.status(server_id, 'ACTIVE')
    host = server['OS-EXT-SRV-ATTR:host']
    providers = _providers_by_host(env.cloud)[host]
    arqs = sorted(
        env.arqs_of(server_id), key=lambda a: a['device_profile_group_id']
    )
    assert [a['state'] for a in arqs] == ['Bound', 'Bound']
    assert [a['hostname'] for a in arqs] == [host, host]
    assert all(a['attach_handle_info'] for a in arqs)
    allocations = env.cloud.placement('/allocations/%s' % server_id)[
        'allocations'
    ]
    on_devices = {
        rp: alloc['resources']
        for rp, alloc in allocations.items()
        if rp in env.cloud.device_providers()
    }
    assert on_devices == {
        arqs[0]['device_rp_uuid']: {'FPGA': 1},
        arqs[1]['device_rp_uuid']: {'PGPU': 1},
    }
    assert arqs[0]['device_rp_uuid'] in providers['FPGA']
    assert arqs[1]['device_rp_uuid'] in providers['PGPU']
    guest = env.guest(host, server_id)
    assert sorted(a['uuid'] for a in guest['accelerators']) == sorted(
        a['uuid'] for a in arqs
    )
    return host, arqs


def test_boot_with_a_two_group_profile_on_fpga_and_gpu_hosts(env):
    servers = [env.boot('accel-%d' % i) for i in range(2)]
    hosts = {_check_bound(env, s)[0] for s in servers}
    # One FPGA per host: the two servers fill both hosts.
    assert hosts == set(HOSTS)
    env.clean(live=servers)
    env.delete(*servers)
    env.clean()


def test_bind_failure_reschedules_to_the_alternate(env):
    env.cloud.control({'hold': True})
    server = env.boot('resched')
    held = env.binding(server)
    failing = held[0]['hostname']
    env.cloud.control({'fail_hosts': [failing]})
    host, arqs = _check_bound(env, server)
    assert host != failing
    # New ARQs on the alternate; the failed ones are gone.
    assert not {a['uuid'] for a in held} & {a['uuid'] for a in arqs}
    assert 'Rescheduling %s from %s' % (server, failing) in env.log(
        'cell1-conductor'
    )
    env.clean(live=[server])
    env.delete(server)
    env.clean()


def test_bind_failure_on_every_host_ends_in_error(env):
    env.cloud.control({'fail': True})
    try:
        server = env.boot('broken')
        failed = env.status(server, 'ERROR')
    finally:
        env.cloud.control({})
    fault = json.dumps(failed.get('fault', {}))
    # The device, its host and the driver's reason.
    assert 'failed to bind' in fault
    assert 'refused the image (control file' in fault
    env.clean()
    env.delete(server)
    env.clean()


def test_bound_event_arriving_before_the_compute_waits(env):
    compute = env.cloud.daemons['acc']
    os.killpg(compute.process.pid, signal.SIGSTOP)
    try:
        server = env.boot('early-event')

        def delivered():
            arqs = env.arqs_of(server)
            log = env.log('accelerator-api')
            return (
                len(arqs) == 2
                and all(a['state'] == 'Bound' for a in arqs)
                and log.count('delivered for instance %s' % server) == 2
            )

        env.wait(delivered, 'both events delivered while the compute waits')
    finally:
        os.killpg(compute.process.pid, signal.SIGCONT)
    _check_bound(env, server)
    env.delete(server)
    env.clean()


def test_deleting_the_server_during_binding(env):
    env.cloud.control({'hold': True})
    try:
        server = env.boot('deleted-while-binding')
        env.binding(server)
        env.delete(server)
    finally:
        env.cloud.control({})
    env.clean()
    # The devices were given back: both hosts take a server again.
    servers = [env.boot('after-delete-%d' % i) for i in range(2)]
    assert {_check_bound(env, s)[0] for s in servers} == set(HOSTS)
    env.delete(*servers)
    env.clean()


def test_accelerator_service_killed_mid_bind_and_restarted(env):
    env.cloud.control({'hold': True})
    try:
        server = env.boot('killed-service')
        env.binding(server)
        env.wait(
            lambda: 'held by' in env.log('agent-acc'),
            'the agent programming under hold',
        )
        env.cloud.daemons['accelerator-api'].kill9()
    finally:
        env.cloud.control({})
    env.cloud.restart_accelerator()
    _check_bound(env, server)
    env.clean(live=[server])
    env.delete(server)
    env.clean()


def test_audit_finds_and_heals_an_orphan_arq(env):
    server = env.boot('orphan')
    _check_bound(env, server)
    accel = env.cloud.daemons['accelerator-api']
    accel.kill9()
    try:
        env.delete(server)
    finally:
        env.cloud.restart_accelerator()
    orphans = [a['uuid'] for a in env.arqs_of(server)]
    assert len(orphans) == 2
    report = json.loads(_audit(env.cloud, '--json', '--grace', '0', expect=1))
    found = {
        d['uuid'] for d in report['disagreements'] if d['kind'] == 'orphan_arq'
    }
    assert found == set(orphans)
    _audit(env.cloud, '--heal', '--grace', '0', expect=0)
    assert env.arqs_of(server) == []
    env.clean()


def test_without_reschedule_a_bind_failure_aborts(env):
    env.restart_compute(
        {
            'accelerator': {'reschedule_on_bind_failure': 'false'},
            'compute': {'arq_binding_timeout': 5},
        }
    )
    env.cloud.control({'hold': True})
    try:
        server = env.boot('abort')
        held = env.binding(server)
        failing = held[0]['hostname']
        env.cloud.control({'fail_hosts': [failing]})
        failed = env.status(server, 'ERROR')
    finally:
        env.cloud.control({})
    fault = json.dumps(failed.get('fault', {}))
    assert 'failed to bind' in fault
    assert 'on %s: ' % failing in fault
    assert 'refused the image (control file' in fault
    assert 'Rescheduling %s' % server not in env.log('cell1-conductor')
    env.clean()
    env.delete(server)
    env.clean()


def test_binding_slower_than_the_timeout(env):
    env.cloud.control({'hold': True})
    try:
        server = env.boot('slow')
        env.binding(server)
        failed = env.status(server, 'ERROR')
        assert 'Timed out after 5s' in json.dumps(failed.get('fault', {}))
    finally:
        env.cloud.control({})
    # The binder finishes programming after the ARQs were deleted: it
    # gives the devices back and nothing is left.
    env.clean()
    env.delete(server)
    env.clean()
    probe = env.boot('after-timeout')
    env.status(probe, 'ERROR', 'ACTIVE')
    env.delete(probe)
    env.clean()


def _audit(cloud, *args, expect):
    config = cloud._write('manage', cloud._common())
    result = subprocess.run(
        [sys.executable, '-m', 'nimbus.cmd.manage', '--config-file', config]
        + ['audit']
        + list(args),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == expect, (result.stdout, result.stderr)
    return result.stdout
