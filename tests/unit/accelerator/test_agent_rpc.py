"""The agent over a real in-process RPC transport: build_agents serves
several hosts on one RPC server; program answers {"programmed": true} or
ProgrammingFailed (received as that class, naming device and reason);
release is a cast; malformed messages are refused."""

import threading
import uuid

import oslo_messaging as messaging
import pytest

from nimbus.accelerator.agent import exception
from nimbus.accelerator.agent import placement_report
from nimbus.accelerator.agent import rpcapi
from nimbus.accelerator.agent import group
from nimbus.common import config
from nimbus.common import context
from nimbus.common import rpc
from nimbus.messaging_internals import simulated
from nimbus.placement import direct


class Reporter:
    def __init__(self):
        self.hosts = {}
        self.lock = threading.Lock()

    def report_devices(self, ctxt, host, devices):
        with self.lock:
            self.hosts[host] = devices


@pytest.fixture
def cloud(request, tmp_path, placement):
    conf = config.build_conf(
        [],
        overrides={
            'DEFAULT': {'state_path': str(tmp_path), 'host': 'acc'},
            'simulated_hosts': {'workers': 4, 'rpc_workers': 2},
            'fake_gpu': {'count': 2},
        },
    )
    transport = rpc.get_transport(
        conf, 'inproc:///agent-%s' % request.node.name
    )
    hosts = simulated.host_names('acc', 3)
    roots = {}
    for host in hosts:
        roots[host] = str(uuid.uuid4())
        placement.add_root(roots[host], host)
    reporter = Reporter()
    agents = group.build_agents(
        conf, transport, placement.client, reporter, hosts
    )
    assert agents.start() == []

    class Cloud:
        pass

    cloud = Cloud()
    cloud.conf, cloud.agents, cloud.reporter = conf, agents, reporter
    cloud.roots, cloud.hosts = roots, hosts
    cloud.api = rpcapi.AgentAPI(transport, conf)
    cloud.ctxt = context.get_admin_context()
    yield cloud
    agents.stop()
    rpc.cleanup_transports(conf)


def _arq(device, handle=0):
    deployable = device['deployables'][0]
    attach = deployable['attach_handles'][handle]
    return {
        'uuid': str(uuid.uuid4()),
        'instance_uuid': str(uuid.uuid4()),
        'device_rp_uuid': deployable['rp_uuid'],
        'attach_handle': {
            k: attach[k] for k in ('uuid', 'attach_type', 'attach_info')
        },
    }


def _gpu(cloud, host, index=0):
    return [
        d for d in cloud.reporter.hosts[host] if d['driver_name'] == 'fake_gpu'
    ][index]


def test_every_host_reports_its_devices(cloud, placement):
    assert set(cloud.agents.agents) == set(cloud.hosts)
    assert set(cloud.reporter.hosts) == set(cloud.hosts)
    for host in cloud.hosts:
        devices = cloud.reporter.hosts[host]
        assert {d['hostname'] for d in devices} == {host}
        assert len(devices) == 3
        tree = placement.tree(cloud.roots[host])
        owned = {
            name
            for name, p in tree.items()
            if placement_report.OWNER_TRAIT in p['traits']
        }
        assert owned == {
            '%s_fake_fpga_0' % host,
            '%s_fake_gpu_0' % host,
            '%s_fake_gpu_1' % host,
        }


def test_program_over_rpc(cloud):
    host = cloud.hosts[1]
    device = _gpu(cloud, host, 1)
    arq = _arq(device)
    assert cloud.api.program(cloud.ctxt, host, arq) == {'programmed': True}
    driver = dict(cloud.agents.agents[host].drivers)['fake_gpu']
    assert driver.programmed == {arq['attach_handle']['uuid']: arq['uuid']}
    # The other hosts' drivers were not involved.
    for other in (cloud.hosts[0], cloud.hosts[2]):
        assert (
            dict(cloud.agents.agents[other].drivers)['fake_gpu'].programmed
            == {}
        )


def test_a_failed_programming_reaches_the_caller_as_programming_failed(
    cloud, caplog
):
    cloud.conf.set_override('fail_program', True, group='fake_gpu')
    host = cloud.hosts[0]
    device = _gpu(cloud, host)
    arq = _arq(device)
    with pytest.raises(exception.ProgrammingFailed) as info:
        cloud.api.program(cloud.ctxt, host, arq)
    # An expected answer: the agent logs a warning, not a server error.
    assert not [r for r in caplog.records if r.levelname == 'ERROR']
    message = str(info.value)
    assert device['uuid'] in message and host in message
    assert arq['uuid'] in message
    assert 'fail_program is set' in message


def test_a_device_of_another_host_is_refused(cloud):
    device = _gpu(cloud, cloud.hosts[0])
    with pytest.raises(
        exception.ProgrammingFailed,
        match='no device with resource provider %s on this'
        % device['deployables'][0]['rp_uuid'],
    ):
        cloud.api.program(cloud.ctxt, cloud.hosts[2], _arq(device))
    arq = _arq(device)
    arq['attach_handle']['uuid'] = str(uuid.uuid4())
    with pytest.raises(
        exception.ProgrammingFailed,
        match='attach handle %s is not one of the device'
        % arq['attach_handle']['uuid'],
    ):
        cloud.api.program(cloud.ctxt, cloud.hosts[0], arq)


def test_a_malformed_arq_is_refused(cloud):
    arq = _arq(_gpu(cloud, cloud.hosts[0]))
    del arq['device_rp_uuid']
    arq['attach_handle'] = 'pci'
    with pytest.raises(
        rpc.InvalidMessage, match='program: arq: device_rp_uuid must be str'
    ):
        cloud.api.program(cloud.ctxt, cloud.hosts[0], arq)
    with pytest.raises(rpc.InvalidMessage, match='arq must be dict'):
        cloud.api.program(cloud.ctxt, cloud.hosts[0], ['not', 'a', 'dict'])


def test_release_is_a_cast_that_frees_the_handle(cloud):
    host = cloud.hosts[2]
    device = _gpu(cloud, host)
    arq = _arq(device)
    cloud.api.program(cloud.ctxt, host, arq)
    driver = dict(cloud.agents.agents[host].drivers)['fake_gpu']
    released = threading.Event()
    real_release = driver.release

    def release(*args):
        real_release(*args)
        released.set()

    driver.release = release
    assert cloud.api.release(cloud.ctxt, host, arq) is None
    assert released.wait(30)
    assert driver.programmed == {}
    # The handle is free for another ARQ.
    assert cloud.api.program(cloud.ctxt, host, _arq(device)) == {
        'programmed': True
    }


def test_unknown_methods_are_not_served(cloud):
    client = rpc.get_client(
        cloud.api._transport,
        rpcapi.TOPIC,
        rpcapi.VERSION,
        server=cloud.hosts[0],
    )
    with pytest.raises(messaging.RemoteError) as info:
        client.call(cloud.ctxt, 'stop')
    assert info.value.exc_type == 'NoSuchMethod'


class BatchReporter(Reporter):
    """A reporter taking the first reports of many hosts in one call;
    ``fail``: that call raises."""

    def __init__(self, fail=False):
        super().__init__()
        self.fail = fail
        self.batches = []
        self.single = []

    def takes_batches(self):
        return True

    def report_many(self, ctxt, reports):
        if self.fail:
            raise RuntimeError('no batch today')
        with self.lock:
            self.batches.append(sorted(reports))
            self.hosts.update(reports)

    def report_devices(self, ctxt, host, devices):
        self.single.append(host)
        super().report_devices(ctxt, host, devices)


@pytest.mark.parametrize('fail', [False, True])
def test_the_hosts_first_device_reports_go_in_one_call(
    request, tmp_path, placement, fail
):
    """A reporter that takes batches gets the hosts' first reports in
    one call before they start, and the hosts send none of their own
    (when the batch fails, each host sends its own); placement gets the
    devices as before."""
    hosts = simulated.host_names('acc', 3)
    roots = {}
    for host in hosts:
        roots[host] = str(uuid.uuid4())
        placement.add_root(roots[host], host)
    reporter = BatchReporter(fail=fail)
    conf, agents = _group(
        request, tmp_path, placement, hosts, 'batch', reporter=reporter
    )
    try:
        assert agents.start() == []
        if fail:
            assert reporter.batches == []
            assert sorted(reporter.single) == hosts
        else:
            assert reporter.batches == [hosts]
            assert reporter.single == []
        assert set(reporter.hosts) == set(hosts)
        assert all(len(reporter.hosts[h]) == 3 for h in hosts)
        for host in hosts:
            assert len(placement.tree(roots[host])) == 1 + 3
            assert not agents.agents[host].placement_pending
        # Discovery finding other devices later is reported on its own.
        agent = agents.agents[hosts[0]]
        agent.drivers = agent.drivers[:1]
        agent.report()
        assert reporter.single[-1] == hosts[0]
    finally:
        agents.stop()
        rpc.cleanup_transports(conf)


def _group(
    request, tmp_path, placement, hosts, name, trees=None, reporter=None
):
    conf = config.build_conf(
        [],
        overrides={
            'DEFAULT': {'state_path': str(tmp_path), 'host': 'acc'},
            'simulated_hosts': {'workers': 4, 'rpc_workers': 2},
            'fake_gpu': {'count': 2},
        },
    )
    transport = rpc.get_transport(
        conf, 'inproc:///%s-%s' % (name, request.node.name)
    )
    agents = group.build_agents(
        conf,
        transport,
        placement.client,
        reporter or Reporter(),
        hosts,
        trees=trees,
    )
    return conf, agents


def test_the_hosts_first_reports_list_providers_once_for_all(
    request, tmp_path, placement
):
    """The first reports of N hosts list placement's providers twice in
    all (each host listed its root and its owned providers: 2N listings,
    each answered from a snapshot placement had to bring up to date after
    the previous host's writes), create each custom trait once, and send
    no read for a provider just created."""
    hosts = simulated.host_names('acc', 6)
    roots = {}
    for host in hosts:
        roots[host] = str(uuid.uuid4())
        placement.add_root(roots[host], host)
    placement.recorder.calls.clear()
    conf, agents = _group(request, tmp_path, placement, hosts, 'first')
    try:
        assert agents.start() == []
    finally:
        agents.stop()
        rpc.cleanup_transports(conf)
    calls = placement.recorder.calls
    assert calls.count(('GET', '/resource_providers')) == 2
    trait_puts = [c for c in calls if c[1].startswith('/traits/')]
    assert len(trait_puts) == len(set(trait_puts))
    devices = 3  # one FPGA, two GPUs
    # Per device: create, inventory, traits; no GET of anything else.
    assert [c for c in calls if c[0] == 'GET'] == [
        ('GET', '/resource_providers')
    ] * 2
    assert len(calls) <= 2 + len(hosts) * devices * 3 + len(trait_puts) + 2
    for host in hosts:
        tree = placement.tree(roots[host])
        assert len(tree) == 1 + devices

    # A restart finds it all in place: the two listings, no write.
    placement.recorder.calls.clear()
    conf, agents = _group(request, tmp_path, placement, hosts, 'again')
    try:
        assert agents.start() == []
    finally:
        agents.stop()
        rpc.cleanup_transports(conf)
    assert placement.recorder.writes == []
    assert placement.recorder.calls.count(('GET', '/resource_providers')) == 2


def test_the_hosts_new_device_providers_go_in_one_write(
    request, tmp_path, placement
):
    """Given placement's bulk writer, the group writes every new device
    provider of its hosts (inventory and traits) in one write before they
    start: no provider request per device, and the hosts' first reports
    write nothing. Placement then holds what the requests make; a host
    without its root is left to its own report."""
    hosts = simulated.host_names('acc', 4)
    roots = {}
    for host in hosts[:3]:
        roots[host] = str(uuid.uuid4())
        placement.add_root(roots[host], host)
    writes = []

    def trees(providers):
        providers = list(providers)
        writes.append(providers)
        return direct.tree_writer(placement.app)(providers)

    placement.recorder.calls.clear()
    conf, agents = _group(request, tmp_path, placement, hosts, 'bulk', trees)
    try:
        assert agents.start() == []
        calls = placement.recorder.calls
        assert [len(w) for w in writes] == [3 * 3]
        assert not [
            c for c in calls if c[1].startswith('/resource_providers/')
        ]
        assert ('POST', '/resource_providers') not in calls
        bulk = {h: placement.tree(roots[h]) for h in hosts[:3]}
        assert agents.agents[hosts[3]].placement_pending
        # A second report finds it all as written.
        placement.recorder.calls.clear()
        for host in hosts[:3]:
            assert not agents.agents[host].report().changed
        assert placement.recorder.writes == []
    finally:
        agents.stop()
        rpc.cleanup_transports(conf)

    # The same hosts' providers written one request at a time.
    for host in hosts[:3]:
        for provider in bulk[host].values():
            if provider['uuid'] != roots[host]:
                placement.client.request(
                    placement.ctxt,
                    'DELETE',
                    '/resource_providers/%s' % provider['uuid'],
                )
    conf, agents = _group(request, tmp_path, placement, hosts[:3], 'each')
    try:
        assert agents.start() == []
    finally:
        agents.stop()
        rpc.cleanup_transports(conf)
    for host in hosts[:3]:
        assert placement.tree(roots[host]) == bulk[host]


def test_a_host_without_its_root_at_the_start_reports_once_it_is_there(
    request, tmp_path, placement
):
    """The group's one read of the trees finds no root for a host whose
    compute has not reported yet: that host asks for itself later."""
    hosts = simulated.host_names('acc', 3)
    roots = {}
    for host in hosts[:2]:
        roots[host] = str(uuid.uuid4())
        placement.add_root(roots[host], host)
    conf, agents = _group(request, tmp_path, placement, hosts, 'late')
    try:
        assert agents.start() == []
        late = agents.agents[hosts[2]]
        assert late.placement_pending
        assert not agents.agents[hosts[0]].placement_pending
        root = str(uuid.uuid4())
        placement.add_root(root, hosts[2])
        assert len(late.retry_placement().created) == 3
        assert len(placement.tree(root)) == 4
    finally:
        agents.stop()
        rpc.cleanup_transports(conf)


def test_periodic_report_skips_unchanged_devices_until_the_refresh(cloud):
    host = cloud.hosts[0]
    agent = cloud.agents.agents[host]
    first = cloud.reporter.hosts.pop(host)
    assert len(first) == 2 + 1  # two GPUs and the default FPGA
    # The same devices within [accelerator_agent] refresh_interval: nothing
    # goes to the service (nor to placement).
    assert agent.periodic_report() is None
    assert host not in cloud.reporter.hosts
    # A device more: a complete report, to the service and to placement.
    cloud.conf.set_override('count', 3, 'fake_gpu')
    result = agent.periodic_report()
    assert len(cloud.reporter.hosts.pop(host)) == 3 + 1
    assert len(result.created) == 1
    assert agent.periodic_report() is None
    assert host not in cloud.reporter.hosts
    # refresh_interval 0: every periodic report is complete.
    cloud.conf.set_override('refresh_interval', 0, 'accelerator_agent')
    assert agent.periodic_report() is not None
    assert len(cloud.reporter.hosts[host]) == 3 + 1
