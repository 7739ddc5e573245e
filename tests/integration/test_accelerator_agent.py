"""nimbus-accelerator-agent as a real daemon: ``--simulated-hosts 3`` on
RabbitMQ against nimbus-placement-api (SQLite). Each host's devices appear
as child providers of its compute node's provider - also for a host whose
provider is created after the agent started - and the binder's RPC
(program, ProgrammingFailed) reaches the right host over the broker."""

import configparser
import os
import time
import uuid

import pytest
import requests

from nimbus.accelerator.agent import exception as agent_exc
from nimbus.accelerator.agent import placement_report
from nimbus.accelerator.agent import rpcapi
from nimbus.accelerator.drivers import base
from nimbus.common.clients.placement import PlacementClient
from nimbus.common import config
from nimbus.common import context
from nimbus.common import rpc
from nimbus.placement import db as placement_db
from nimbus.testing import daemons

pytestmark = pytest.mark.integration


def _write(path, sections):
    parser = configparser.ConfigParser(interpolation=None)
    for section, values in sections.items():
        parser[section] = {k: str(v) for k, v in values.items()}
    with open(path, 'w') as f:
        parser.write(f)
    return path


def _wait(predicate, what, procs, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        for proc in procs:
            assert proc.alive(), '%s exited:\n%s' % (proc.name, proc.tail())
        time.sleep(0.3)
    raise AssertionError(
        'timed out waiting for %s\n%s'
        % (what, '\n'.join(p.tail() for p in procs))
    )


def test_agent_daemon_with_three_simulated_hosts(tmp_path, fresh):
    bus = fresh.vhost()
    workdir = str(tmp_path)
    db_url = 'sqlite:///%s/placement.sqlite' % workdir
    placement_db.sync(db_url)
    port = daemons.free_port()
    endpoint = 'http://127.0.0.1:%d' % port
    placement_api = daemons.Daemon(
        'placement-api',
        'nimbus.cmd.placement_api',
        _write(
            os.path.join(workdir, 'placement.conf'),
            {
                'DEFAULT': {'state_path': workdir},
                'placement_database': {'connection': db_url},
                'api': {'auth_strategy': 'noauth2'},
                'wsgi': {
                    'placement_listen': '127.0.0.1',
                    'placement_listen_port': port,
                },
            },
        ),
        os.path.join(workdir, 'placement.log'),
    ).start()
    agent = daemons.Daemon(
        'agent',
        'nimbus.cmd.accelerator_agent',
        _write(
            os.path.join(workdir, 'agent.conf'),
            {
                'DEFAULT': {'state_path': workdir, 'host': 'acc'},
                'rpc': {'transport_url': bus, 'rpc_response_timeout': 5},
                'placement_client': {'endpoint': endpoint},
                'accelerator_agent': {
                    'report_interval': 30,
                    'placement_retry_interval': 1,
                },
                'fake_gpu': {'count': 2, 'num_accelerators': 2},
                'fake_fpga': {'fail_program': 'true'},
                'simulated_hosts': {'workers': 4, 'rpc_workers': 2},
            },
        ),
        os.path.join(workdir, 'agent.log'),
        ['--simulated-hosts', '3'],
    )
    # The accelerator service the agent reports its devices to first.
    accel_port = daemons.free_port()
    accel_api = daemons.Daemon(
        'accel-api',
        'nimbus.cmd.accelerator_api',
        _write(
            os.path.join(workdir, 'accelerator.conf'),
            {
                'DEFAULT': {'state_path': workdir, 'host': 'accel'},
                'rpc': {'transport_url': bus},
                'accelerator_database': {
                    'connection': 'sqlite:///%s'
                    % os.path.join(workdir, 'accel.db')
                },
                'accelerator_api': {
                    'listen': '127.0.0.1',
                    'listen_port': accel_port,
                },
                'api': {'auth_strategy': 'noauth2'},
            },
        ),
        os.path.join(workdir, 'accel-api.log'),
    ).start()
    procs = [placement_api, accel_api]
    conf = config.build_conf([])
    ctxt = context.get_admin_context()
    placement = PlacementClient(endpoint)
    try:
        _wait(lambda: _answers(endpoint), 'placement', procs)
        hosts = ['acc-0001', 'acc-0002', 'acc-0003']
        roots = {host: str(uuid.uuid4()) for host in hosts}
        # The computes of two hosts reported already; the third not yet.
        for host in hosts[:2]:
            placement.ensure_resource_provider(ctxt, roots[host], host)
        agent.start()
        procs.append(agent)

        def devices(host):
            tree = placement.get_provider_tree(ctxt, roots[host])
            return {
                p['name']: p
                for p in tree
                if placement_report.OWNER_TRAIT in p['traits']
            }

        def reported(host):
            found = devices(host)
            return found if len(found) == 3 else None

        for host in hosts[:2]:
            found = _wait(
                lambda host=host: reported(host), 'devices of %s' % host, procs
            )
            assert set(found) == {
                '%s_fake_fpga_0' % host,
                '%s_fake_gpu_0' % host,
                '%s_fake_gpu_1' % host,
            }
            gpu = found['%s_fake_gpu_1' % host]
            assert gpu['parent_provider_uuid'] == roots[host]
            assert gpu['inventories']['PGPU']['total'] == 2
            assert 'CUSTOM_GPU_PRODUCT_ID_1EB8' in gpu['traits']
        placement.ensure_resource_provider(ctxt, roots[hosts[2]], hosts[2])
        late = _wait(
            lambda: reported(hosts[2]), 'devices of the late host', procs
        )

        # The binder's RPC, over RabbitMQ, to the host of the device.
        transport = rpc.get_transport(conf, bus)
        api = rpcapi.AgentAPI(transport)
        gpu = late['acc-0003_fake_gpu_0']
        # A handle that is not the device's, and a device that is not the
        # host's: refused, saying which.
        arq = {
            'uuid': str(uuid.uuid4()),
            'instance_uuid': str(uuid.uuid4()),
            'device_rp_uuid': gpu['uuid'],
            'attach_handle': {
                'uuid': str(uuid.uuid4()),
                'attach_type': 'PCI',
                'attach_info': '{}',
            },
        }
        with pytest.raises(
            agent_exc.ProgrammingFailed, match='is not one of the device'
        ):
            api.program(ctxt, 'acc-0003', arq, timeout=30)
        with pytest.raises(
            agent_exc.ProgrammingFailed,
            match='no device with resource provider',
        ):
            api.program(ctxt, 'acc-0001', arq, timeout=30)
        handle = _handle_of(gpu['uuid'], 'acc-0003', 'fake_gpu', 0)
        arq['attach_handle']['uuid'] = handle
        assert api.program(ctxt, 'acc-0003', arq, timeout=30) == {
            'programmed': True
        }
        fpga = late['acc-0003_fake_fpga_0']
        arq = dict(
            arq,
            uuid=str(uuid.uuid4()),
            device_rp_uuid=fpga['uuid'],
            attach_handle=dict(
                arq['attach_handle'],
                uuid=_handle_of(fpga['uuid'], 'acc-0003', 'fake_fpga', 0),
            ),
        )
        with pytest.raises(
            agent_exc.ProgrammingFailed, match='fail_program is set'
        ):
            api.program(ctxt, 'acc-0003', arq, timeout=30)
        with open(agent.log_file) as f:
            log = f.read()
        assert 'nimbus-accelerator-agent: 3 hosts started' in log
        assert 'Traceback' not in log
    finally:
        agent.stop()
        placement_api.stop()
        accel_api.stop()
        rpc.cleanup_transports(conf)
    assert agent.process.returncode == 0, agent.tail()


def _answers(url):
    try:
        return requests.get(url + '/', timeout=2).status_code == 200
    except requests.RequestException:
        return False


def _handle_of(rp_uuid, host, driver, index):
    """The first attach handle of device ``index``: derived as the agent
    derives it (the same uuid5 rules), checked against its provider."""
    device = base.device_uuid(host, driver, index)
    assert base.provider_uuid(host, device) == rp_uuid
    deployable = base.child_uuid(device, 'deployable', 0)
    return base.child_uuid(deployable, 'handle', 0)
