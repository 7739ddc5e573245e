"""A :class:`~nimbus.testing.daemons.DaemonCloud` with the accelerator
service: nimbus-accelerator-api (its own database) and, per simulated
compute process, a nimbus-accelerator-agent process serving the same hosts
with fake FPGA and GPU devices.

The fake drivers of every agent read one control file (see
:mod:`nimbus.accelerator.drivers.fake`): :meth:`AccelDaemonCloud.control`
holds, fails or frees the programming of devices while the daemons run.

:func:`leaks` answers the two questions every accelerator test ends with:
which ARQs have no live instance, and which allocations on a device
provider have no Bound ARQ behind them.
"""

import json
import os

import requests

from nimbus.accelerator.agent import placement_report
from nimbus.testing import daemons

SERVICE_HEADERS = {
    'X-Auth-Token': 'nimbus:service',
    'X-Roles': 'admin,service',
}
PLACEMENT_HEADERS = {
    'X-Auth-Token': 'admin',
    'OpenStack-API-Version': 'placement latest',
}
# The ownership trait the agent puts on every device provider.
OWNER_TRAIT = placement_report.OWNER_TRAIT


class AccelDaemonCloud(daemons.DaemonCloud):
    """``AccelDaemonCloud(workdir, api_bus, cell_bus, databases, ...)``:
    ``databases`` also holds ``accelerator``. Every daemon of the compute
    path gets ``[accelerator_client] endpoint``; the accelerator API gets
    ``[compute_client] endpoint`` (nimbus-api, for the bound events)."""

    def __init__(self, workdir, api_bus, cell_bus, databases, **kwargs):
        kwargs.setdefault('hosts', 0)
        super().__init__(workdir, api_bus, cell_bus, databases, **kwargs)
        self.accel_port = daemons.free_port()
        self.accel_ports = self._ports('accelerator', self.accel_port)
        self.control_file = os.path.join(workdir, 'fake-devices.json')
        self.common_options.setdefault('accelerator_client', {})[
            'endpoint'
        ] = self.accel_url + '/v2'
        self.control({})

    @property
    def accel_url(self):
        return 'http://127.0.0.1:%d' % self.accel_port

    def control(self, value):
        """Replace the fake drivers' control file (atomically)."""
        tmp = self.control_file + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(value, f)
        os.replace(tmp, self.control_file)

    def replica_groups(self):
        groups = super().replica_groups()
        if len(self.accel_ports) > 1:
            groups['accelerator-api'] = [
                self.replica_name('accelerator-api', i)
                for i in range(len(self.accel_ports))
            ]
        return groups

    def _accel_sections(self, port=None):
        sections = self._base()
        sections['DEFAULT']['host'] = 'accel'
        sections['accelerator_database'] = {
            'connection': self.databases['accelerator']
        }
        sections['accelerator_api'] = {
            'listen': '127.0.0.1',
            'listen_port': port or self.accel_port,
            'bind_poll_interval': 0.2,
            'event_retry_initial': 0.5,
            'event_retry_max': 2,
        }
        sections['compute_client'] = {'endpoint': self.api_url + '/v2.1'}
        return sections

    def start_accelerator(self):
        """nimbus-accelerator-api (migrating its database at start), once
        per replica (a round-robin proxy in front of several)."""
        for index, port in enumerate(self.accel_ports):
            self._daemon(
                self.replica_name('accelerator-api', index),
                'nimbus.cmd.accelerator_api',
                self._accel_sections(port),
            )
            self.wait_http('http://127.0.0.1:%d/' % port)
        self._front(self.accel_ports, self.accel_port)
        self.wait_http(self.accel_url + '/')

    def restart_accelerator(self):
        self.daemons['accelerator-api'].start()
        self.wait_http(self.accel_url + '/')

    def start_agent(self, name, count, devices=None):
        """nimbus-accelerator-agent serving ``<name>-0001`` ... (the hosts
        of ``start_simulated(name, count)``); ``devices`` are extra
        ``[fake_fpga]``/``[fake_gpu]`` options."""
        sections = self._base()
        sections['DEFAULT']['host'] = name
        sections['DEFAULT']['state_path'] = os.path.join(
            self.workdir, 'agent-%s' % name
        )
        sections['accelerator_agent'] = {
            'report_interval': 30,
            'placement_retry_interval': 1,
        }
        for group in ('fake_fpga', 'fake_gpu'):
            sections[group] = {'control_file': self.control_file}
            sections[group].update((devices or {}).get(group, {}))
        sections['simulated_hosts'] = {'workers': 4, 'rpc_workers': 8}
        return self._daemon(
            'agent-%s' % name,
            'nimbus.cmd.accelerator_agent',
            sections,
            ['--simulated-hosts', str(count)],
        )

    # -- reading the accelerator service and placement -------------------

    def accel(self, method, path, **kwargs):
        return requests.request(
            method,
            self.accel_url + '/v2' + path,
            headers=SERVICE_HEADERS,
            timeout=30,
            **kwargs,
        )

    def arqs(self):
        response = self.accel('GET', '/accelerator_requests')
        response.raise_for_status()
        return response.json()['arqs']

    def placement(self, path):
        response = requests.get(
            self.placement_url + path, headers=PLACEMENT_HEADERS, timeout=30
        )
        response.raise_for_status()
        return response.json()

    def device_providers(self):
        """``{rp uuid: provider}`` of every device provider."""
        response = requests.get(
            self.placement_url
            + '/resource_providers?required=%s' % OWNER_TRAIT,
            headers=PLACEMENT_HEADERS,
            timeout=30,
        )
        if response.status_code == 400 and 'No such trait' in response.text:
            # Placement refuses a filter on a trait nobody created yet:
            # before the first agent reports there is no device provider.
            return {}
        response.raise_for_status()
        return {rp['uuid']: rp for rp in response.json()['resource_providers']}

    def device_allocations(self):
        """``{(consumer, rp uuid): resources}`` on device providers."""
        out = {}
        for rp_uuid in self.device_providers():
            allocations = self.placement(
                '/resource_providers/%s/allocations' % rp_uuid
            )['allocations']
            for consumer, alloc in allocations.items():
                out[(consumer, rp_uuid)] = alloc['resources']
        return out


def leaks(cloud, live_instances):
    """What the accelerator side holds without a reason: a list of
    sentences, empty when clean. ``live_instances`` are the uuids of the
    servers that exist (not deleted)."""
    live = set(live_instances)
    problems = []
    arqs = cloud.arqs()
    for arq in arqs:
        if arq.get('instance_uuid') not in live:
            problems.append(
                'ARQ %s (%s) has no live instance (instance %s)'
                % (arq['uuid'], arq['state'], arq.get('instance_uuid'))
            )
    bound = {
        (arq['instance_uuid'], arq['device_rp_uuid'])
        for arq in arqs
        if arq['state'] == 'Bound'
    }
    for consumer, rp_uuid in cloud.device_allocations():
        if (consumer, rp_uuid) not in bound:
            problems.append(
                'allocation of %s on device provider %s without a Bound ARQ'
                % (consumer, rp_uuid)
            )
    return problems


def disagreements(cloud, servers, active, moving, accel_suffix):
    """``(orphan ARQs, servers whose ARQs disagree)`` of a settled cloud
    (the fault suite's two ARQ columns). ``servers`` are every listed
    server (API server views), ``active`` and ``moving`` the uuids of the
    ACTIVE ones and of those still building or deleting (left out); a
    server booted with a device profile has a name ending in
    ``accel_suffix``.

    An orphan is an ARQ whose instance is not listed. A server disagrees
    when it is ACTIVE with a device profile and not every ARQ of it is
    Bound (or it has none), when it holds a Bound ARQ without being such a
    server, or when it holds an allocation on a device provider without
    the Bound ARQ for it."""
    arqs = cloud.arqs()
    live = {server['id'] for server in servers}
    orphans = sum(1 for a in arqs if a['instance_uuid'] not in live)
    by_server = {}
    for arq in arqs:
        by_server.setdefault(arq['instance_uuid'], []).append(arq['state'])
    wrong = set()
    for server in servers:
        uuid = server['id']
        if uuid in moving:
            continue
        states = by_server.get(uuid, [])
        if server['name'].endswith(accel_suffix) and uuid in active:
            if not states or any(state != 'Bound' for state in states):
                wrong.add(uuid)
        elif 'Bound' in states:
            wrong.add(uuid)
    bound = {
        (a['instance_uuid'], a['device_rp_uuid'])
        for a in arqs
        if a['state'] == 'Bound'
    }
    for consumer, rp_uuid in cloud.device_allocations():
        if consumer not in moving and (consumer, rp_uuid) not in bound:
            wrong.add(consumer)
    return orphans, len(wrong)
