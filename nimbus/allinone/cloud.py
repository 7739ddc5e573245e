"""Start every Nimbus service in one process.

By default: the in-process bus (``inproc:///`` for the API level,
``inproc:///cell1`` for cell1), SQLite files under the state directory, and
N simulated compute hosts (fake virt driver). Given RabbitMQ URLs the same
services talk over the broker instead. Each compute gets its own config, as
it would on its own machine.
"""

import os
import threading
import time
import urllib.parse

from oslo_log import log as logging

from nimbus.allinone import accelerators as accelerators_mod
from nimbus.common import config
from nimbus.common import db as common_db
from nimbus.common import rpc
from nimbus.common import service
from nimbus.common import wsgi
from nimbus import db as nimbus_db
from nimbus.db import cell_mappings
from nimbus import services

LOG = logging.getLogger(__name__)


class ConfigurationError(ValueError):
    """The cloud cannot start with these arguments (a one-line reason)."""


def cell_bus_for(api_url, cell_url=None):
    """cell1's transport URL: ``cell_url``, or one derived from the API's.

    The super conductor and every cell conductor serve the same topic
    (``conductor``), so cell1 needs a bus of its own. An in-process URL
    gets its own in-process vhost (``inproc:///X`` -> ``inproc:///X-cell1``).
    A RabbitMQ vhost cannot be created through AMQP (only with rabbitmqctl
    or the management API), and exchanges do not separate RabbitMQ queues
    of the same name, so a broker URL must come with a cell URL.
    """
    try:
        driver, _hosts, vhost = rpc.bus_of(api_url)
    except ValueError as exc:
        raise ConfigurationError('--transport-url: %s' % exc) from exc
    if cell_url is None:
        if driver != 'inproc':
            example, vhost_name, user = _example_cell_bus(api_url)
            raise ConfigurationError(
                '--transport-url %s needs --cell-transport-url too: cell1 '
                'needs a RabbitMQ vhost of its own, e.g. '
                '--cell-transport-url %s (create it first: rabbitmqctl '
                'add_vhost %s && rabbitmqctl set_permissions -p %s %s '
                '".*" ".*" ".*")'
                % (
                    rpc.mask_url(api_url),
                    example,
                    vhost_name,
                    vhost_name,
                    user,
                )
            )
        return 'inproc:///%s' % ('%s-cell1' % vhost if vhost else 'cell1')
    try:
        clash = rpc.same_bus(api_url, cell_url)
    except ValueError as exc:
        raise ConfigurationError('--cell-transport-url: %s' % exc) from exc
    if clash:
        raise ConfigurationError(
            '--cell-transport-url must name another vhost than '
            '--transport-url: the super conductor and the cell conductor '
            'would share the conductor queue'
        )
    return cell_url


def _cell2_bus(cell1_url):
    """cell2's in-process bus, next to cell1's (a broker URL must be
    given: its vhost has to exist)."""
    if not cell1_url.startswith('inproc:'):
        raise ConfigurationError(
            'a second cell on a broker needs cell2_transport_url'
        )
    if cell1_url.endswith('cell1'):
        return cell1_url[: -len('cell1')] + 'cell2'
    return cell1_url + '-cell2'


def _example_cell_bus(api_url):
    """``(cell URL, its vhost, the user)`` suggested for an API URL."""
    parts = urllib.parse.urlsplit(api_url)
    vhost = urllib.parse.unquote(parts.path[1:])
    cell_vhost = 'cell1' if vhost in ('', '/') else vhost + '-cell1'
    url = urllib.parse.urlunsplit(
        (
            parts.scheme,
            parts.netloc,
            '/' + urllib.parse.quote(cell_vhost, ''),
            parts.query,
            '',
        )
    )
    user = urllib.parse.unquote(parts.username or 'guest')
    return rpc.mask_url(url), cell_vhost, user


def _sqlite(state_dir, name):
    return 'sqlite:///%s' % os.path.join(
        os.path.abspath(state_dir), '%s.sqlite' % name
    )


# The all-in-one's host discovery skips the cells where nothing moved,
# but reads every cell at every 30th pass (a minute at 2 s).
FULL_DISCOVERY_EVERY = 30

UNLIMITED_QUOTAS = {
    'instances': -1,
    'cores': -1,
    'ram': -1,
    'server_groups': -1,
    'server_group_members': -1,
}


class _Transports:
    """The RPC transports of one conf, as a stoppable."""

    def __init__(self, conf):
        self.conf = conf

    def stop(self):
        rpc.cleanup_transports(self.conf)


class Cloud:
    """A running all-in-one cloud. Use as a context manager or start/stop.

    ``fail_hosts`` names hosts whose fake driver fails every build;
    ``host_overrides`` maps a host to ``{group: {opt: value}}``.
    ``shared_hosts``: run the computes as simulated hosts on one RPC
    server, one worker pool and one ticker
    (:mod:`nimbus.compute.simulated`, what ``nimbus all-in-one`` uses),
    their placement requests going straight into the placement app of
    the process (:func:`nimbus.placement.direct.mount`, no HTTP);
    otherwise each compute is a service of its own with its own config
    and transport, as on its own machine.
    """

    def __init__(
        self,
        state_dir,
        hosts=8,
        transport_url=None,
        cell_transport_url=None,
        api_port=0,
        placement_port=0,
        overrides=None,
        fail_hosts=(),
        host_overrides=None,
        host_prefix='host-',
        database_urls=None,
        discover_interval=2.0,
        shared_hosts=False,
        accelerators=False,
        accelerator_port=0,
        cell2_hosts=0,
        cell2_transport_url=None,
    ):
        self.state_dir = os.path.abspath(state_dir)
        self.num_hosts = hosts
        self.transport_url = transport_url or 'inproc:///'
        self.cell_transport_url = cell_bus_for(
            self.transport_url, cell_transport_url
        )
        self.api_port = api_port
        self.placement_port = placement_port
        self.overrides = overrides or {}
        self.fail_hosts = set(fail_hosts)
        self.host_overrides = host_overrides or {}
        self.host_prefix = host_prefix
        urls = database_urls or {}
        self.db_urls = {
            'api': urls.get('api') or _sqlite(self.state_dir, 'api'),
            'cell0': urls.get('cell0') or _sqlite(self.state_dir, 'cell0'),
            'cell1': urls.get('cell1') or _sqlite(self.state_dir, 'cell1'),
            'placement': (
                urls.get('placement') or _sqlite(self.state_dir, 'placement')
            ),
        }
        # A second compute cell (cross-cell moves): ``cell2_hosts`` hosts
        # named ``cell2-host-N``, a cell conductor and a bus of its own.
        self.cell2_hosts = int(cell2_hosts or 0)
        self.cell2_transport_url = None
        if self.cell2_hosts:
            self.db_urls['cell2'] = urls.get('cell2') or _sqlite(
                self.state_dir, 'cell2'
            )
            self.cell2_transport_url = cell2_transport_url or _cell2_bus(
                self.cell_transport_url
            )
        self.discover_interval = discover_interval
        self.conf = None
        self.placement_url = None
        self.api_url = None
        self.dashboard_url = None
        self.computes = {}
        self.placement_app = None
        self.shared_hosts = shared_hosts
        self._group = None
        # The accelerator service and one agent per host (fake devices).
        self.accelerators = (
            accelerators_mod.Accelerators(self, accelerator_port)
            if accelerators
            else None
        )
        self.accelerator_url = None
        # Every conf built (the cloud's and each compute's): stop() closes
        # their RPC transports.
        self.confs = []
        self._stoppables = []
        self._stop = threading.Event()

    # -- configuration ---------------------------------------------------

    def _overrides(self, extra=None):
        values = {
            'DEFAULT': {
                'state_path': self.state_dir,
                'host': 'aio',
                'report_interval': 2,
            },
            'rpc': {'transport_url': self.transport_url},
            'api_database': {'connection': self.db_urls['api']},
            'placement_database': {'connection': self.db_urls['placement']},
            'api': {'auth_strategy': 'noauth2'},
            # A playground (and the test helper) has no quota limits
            # unless asked for: Nova's defaults (10 instances) would stop
            # the demo. ``overrides={'quota': {...}}`` sets them.
            'quota': dict(UNLIMITED_QUOTAS),
            'placement_client': {
                'endpoint': self.placement_url or 'http://127.0.0.1:8778'
            },
        }
        accel = self.accelerators.overrides() if self.accelerators else {}
        for source in (accel, self.overrides, extra or {}):
            for group, opts in source.items():
                values.setdefault(group, {}).update(opts)
        return values

    def _conf(self, extra=None):
        conf = config.build_conf([], overrides=self._overrides(extra))
        self.confs.append(conf)
        return conf

    def host_names(self):
        return [
            '%s%d' % (self.host_prefix, i)
            for i in range(1, self.num_hosts + 1)
        ]

    def cell2_host_names(self):
        return ['cell2-host-%d' % i for i in range(1, self.cell2_hosts + 1)]

    # -- lifecycle ---------------------------------------------------------

    def start(self):
        os.makedirs(self.state_dir, exist_ok=True)
        self.conf = self._conf()
        self._prepare_databases()
        self.placement_app = services.placement_app(self.conf)
        placement_server = wsgi.serve(
            self.placement_app,
            '127.0.0.1',
            self.placement_port,
            name='nimbus-placement-api',
            backlog=self.conf.wsgi.listen_backlog,
        )
        self._stoppables.append(placement_server)
        self.placement_url = placement_server.url
        if self.accelerators is not None:
            self._stoppables.extend(self.accelerators.serve())
            self.accelerator_url = self.accelerators.url
        self.conf = self._conf()
        self._start(services.scheduler_service(self.conf))
        self._start(services.super_conductor_service(self.conf))
        self._start(
            services.cell_conductor_service(
                self.conf,
                transport_url=self.cell_transport_url,
                database_url=self.db_urls['cell1'],
                host='aio-cell1',
            )
        )
        if self.cell2_hosts:
            self._start(
                services.cell_conductor_service(
                    self.conf,
                    transport_url=self.cell2_transport_url,
                    database_url=self.db_urls['cell2'],
                    host='aio-cell2',
                )
            )
        if self.shared_hosts:
            self._start_group()
        else:
            for host in self.host_names():
                self.start_compute(host)
        for host in self.cell2_host_names():
            svc = services.compute_service(self.compute_conf(host), host=host)
            svc.start()
            self.computes[host] = svc
        cell_mappings.discover_hosts(services.api_db(self.conf))
        if self.accelerators is not None:
            self._stoppables.append(
                self.accelerators.start_agents(
                    self.host_names() + self.cell2_host_names()
                )
            )
        api_app = services.api_app(self.conf)
        api_server = wsgi.serve(
            api_app,
            '127.0.0.1',
            self.api_port,
            name='nimbus-api',
            backlog=self.conf.wsgi.listen_backlog,
        )
        self._stoppables.append(api_server)
        # Stopped before the server: open event streams end at once.
        self._stoppables.append(api_app.dashboard)
        self.api_url = api_server.url
        if self.accelerators is not None:
            self.accelerators.connect_api(self.api_url)
        self.dashboard_url = self.api_url + '/dashboard/'
        if self.discover_interval:
            thread = threading.Thread(
                target=self._discover_loop, daemon=True, name='discover-hosts'
            )
            thread.start()
        return self

    def _prepare_databases(self):
        nimbus_db.sync_api(self.db_urls['api'])
        nimbus_db.sync_cell(self.db_urls['cell0'])
        nimbus_db.sync_cell(self.db_urls['cell1'])
        from nimbus.placement import db as placement_db

        placement_db.sync(self.db_urls['placement'])
        api_db = common_db.get_database(self.db_urls['api'])
        cell_mappings.ensure_cell0(api_db, self.db_urls['cell0'])
        cell_mappings.check_bus(
            api_db, 'cell1', self.cell_transport_url, self.transport_url
        )
        cell_mappings.create_cell(
            api_db, 'cell1', self.cell_transport_url, self.db_urls['cell1']
        )
        if self.cell2_hosts:
            nimbus_db.sync_cell(self.db_urls['cell2'])
            cell_mappings.check_bus(
                api_db, 'cell2', self.cell2_transport_url, self.transport_url
            )
            cell_mappings.create_cell(
                api_db,
                'cell2',
                self.cell2_transport_url,
                self.db_urls['cell2'],
            )

    def _start(self, svc):
        svc.start()
        self._stoppables.append(svc)
        return svc

    def compute_conf(self, host):
        bus = (
            self.cell2_transport_url
            if host in self.cell2_host_names()
            else self.cell_transport_url
        )
        extra = {'DEFAULT': {'host': host}, 'rpc': {'transport_url': bus}}
        if host in self.fail_hosts:
            extra['fake_driver'] = {'fail_builds': True}
        for group, opts in self.host_overrides.get(host, {}).items():
            extra.setdefault(group, {}).update(opts)
        return self._conf(extra)

    def _start_group(self):
        from nimbus import services

        conf = self._conf({'rpc': {'transport_url': self.cell_transport_url}})
        special = self.fail_hosts | set(self.host_overrides)
        # The hosts reach this process's placement app without HTTP.
        self._group = services.simulated_computes(
            conf,
            conf_for=lambda host: (
                self.compute_conf(host) if host in special else conf
            ),
            placement_app=self.placement_app,
        )
        self._group.names = self.host_names()
        # The group's dict: computes started and stopped through the
        # group show here.
        self.computes = self._group.hosts
        failed = self._group.start()
        if failed:
            raise RuntimeError(
                'simulated hosts failed to start: %s' % ', '.join(failed)
            )

    def start_compute(self, host):
        if self._group is not None:
            return self._group.start_host(host)
        svc = services.compute_service(self.compute_conf(host), host=host)
        svc.start()
        self.computes[host] = svc
        return svc

    def stop_compute(self, host):
        """A clean stop: builds under way finish first."""
        if self._group is not None:
            return self._group.stop_host(host)
        svc = self.computes.pop(host)
        svc.stop()

    def kill_compute(self, host):
        """Like ``kill -9`` of the host's agent: builds under way are
        abandoned mid-spawn, nothing is reported."""
        if self._group is not None:
            return self._group.kill_host(host)
        svc = self.computes.pop(host)
        svc.kill()

    def _discover_loop(self):
        # A cell whose nodes and mappings did not move since the last pass
        # is not read (cell_mappings.discover_hosts); every
        # FULL_DISCOVERY_EVERY passes each is read anyway.
        marks, passes = {}, 0
        while not self._stop.wait(self.discover_interval):
            passes += 1
            if passes % FULL_DISCOVERY_EVERY == 0:
                marks.clear()
            try:
                cell_mappings.discover_hosts(
                    services.api_db(self.conf), marks=marks
                )
            except Exception:
                marks.clear()
                LOG.exception('discover_hosts failed')

    def stop(self):
        self._stop.set()
        if self._group is not None:
            try:
                self._group.stop()
            except Exception:
                LOG.exception('stopping the simulated hosts failed')
            self._group = None
        # The computes first (they may still report to their conductor),
        # then everything else, each tier at once.
        service.stop_all(list(self.computes.values()))
        self.computes.clear()
        service.stop_all(list(reversed(self._stoppables)))
        self._stoppables.clear()
        service.stop_all([_Transports(conf) for conf in self.confs])
        self.confs.clear()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def wait_forever(self):
        while not self._stop.wait(1.0):
            pass


def wait_for(predicate, timeout=60.0, interval=0.1, what='condition'):
    """Poll ``predicate`` until it returns a truthy value; return it."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError('timed out waiting for %s' % what)
        time.sleep(interval)
