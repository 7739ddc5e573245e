"""Running services: RPC servers, periodic tasks, signals.

A service is a plain object with ``start()`` and ``stop()``. The daemons
(``nimbus.cmd``) and the all-in-one runner start the same objects; only the
transport URLs and database URLs differ.
"""

import signal
import threading

from futurist import periodics
from oslo_log import log as logging

from nimbus.common import rpc

LOG = logging.getLogger(__name__)


class RPCService:
    """An RPC server for one topic with the given endpoints."""

    def __init__(
        self,
        transport,
        topic,
        server,
        endpoints,
        version='1.0',
        on_stop=(),
        periodics=(),
        threads=None,
    ):
        """``threads``: the size of the server's executor pool (default
        ``[DEFAULT] executor_thread_pool_size``)."""
        self.transport = transport
        self.topic = topic
        self.server_name = server
        self.endpoints = endpoints
        self.version = version
        self._server = None
        self._on_stop = list(on_stop)
        self._periodics = list(periodics)
        self.threads = threads

    @property
    def periodics(self):
        """The periodic tasks started and stopped with the server."""
        return tuple(self._periodics)

    def start(self):
        self._server = rpc.get_server(
            self.transport,
            self.topic,
            self.endpoints,
            self.server_name,
            self.version,
        )
        self._server.start(override_pool_size=self.threads)
        for periodic in self._periodics:
            periodic.start()
        LOG.info(
            'Serving topic %s as %s on %s',
            self.topic,
            self.server_name,
            rpc.bus_name(self.transport),
        )
        return self

    def stop(self):
        for periodic in self._periodics:
            periodic.stop()
        if self._server is not None:
            self._server.stop()
            self._server.wait()
            self._server = None
        for callback in self._on_stop:
            callback()


# The binary a cell conductor records its own heartbeat under (the scheduler
# reads it to tell dead computes from a dead heartbeat recorder).
CONDUCTOR_BINARY = 'nimbus-conductor'
# The super conductor records its heartbeat under CONDUCTOR_BINARY too (as
# Nova's super conductor and cell conductors are both nova-conductor), the
# scheduler under this one; both in cell0's database.
SCHEDULER_BINARY = 'nimbus-scheduler'


class Periodic:
    """Runs ``func`` every ``interval`` seconds: a futurist periodic worker
    in a daemon thread, the next run ``interval`` seconds after the
    previous one ended. A run that raises is logged and the next one comes
    on time."""

    def __init__(self, interval, func, name=None, first=None):
        """``first``: seconds before the first run (default: one
        ``interval``)."""
        self.interval = interval
        self.first = interval if first is None else first
        self.func = func
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._worker = None
        self._thread = threading.Thread(
            target=self._run,
            daemon=True,
            name=name or getattr(func, '__name__', 'periodic'),
        )

    @property
    def name(self):
        return self._thread.name

    @property
    def runs(self):
        """``{'runs': n, 'failures': n, 'elapsed': seconds}`` so far (the
        worker's watcher), or None before the worker started."""
        worker = self._worker
        if worker is None:
            return None
        for watcher in worker.iter_watchers():
            return {
                'runs': watcher.runs,
                'failures': watcher.failures,
                'elapsed': watcher.elapsed,
            }
        return None

    def _run(self):
        # futurist runs a callable either at once or one spacing after the
        # start: another first delay is waited out here, then the first run
        # comes at once.
        immediately = self.first != self.interval
        if immediately and self._stopped.wait(self.first):
            return

        def tick():
            self.func()

        tick.__qualname__ = tick.__name__ = self.name
        worker = periodics.PeriodicWorker(
            [
                (
                    periodics.periodic(
                        self.interval, run_immediately=immediately
                    )(tick),
                    None,
                    None,
                )
            ],
            schedule_strategy='last_finished',
            on_failure=self._failed,
        )
        with self._lock:
            if self._stopped.is_set():
                return
            self._worker = worker
        worker.start()

    def _failed(self, callback, kind, spacing, exc_info, traceback=None):
        LOG.error('Periodic task %s failed', self.name, exc_info=exc_info)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        with self._lock:
            self._stopped.set()
            worker = self._worker
        if worker is not None:
            worker.stop()


def run_until_signalled(services, conf=None):
    """Start nothing; wait for SIGTERM/SIGINT, then stop ``services`` and
    close every RPC transport of the process (RabbitMQ connections).

    With ``conf``, SIGHUP reloads its config files: the options declared
    ``mutable`` take their new values (oslo.config logs each change), the
    others keep theirs until a restart."""
    done = threading.Event()
    reload = threading.Event()

    def handler(signum, frame):
        LOG.info('Signal %s received; stopping', signum)
        done.set()

    def on_hup(signum, frame):
        reload.set()

    previous = {
        sig: signal.signal(sig, handler)
        for sig in (signal.SIGTERM, signal.SIGINT)
    }
    if conf is not None:
        previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, on_hup)
    try:
        while not done.wait(1.0):
            if reload.is_set():
                reload.clear()
                _reload(conf)
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
        stop_all(services)
        rpc.cleanup_transports()


def _reload(conf):
    """Read the config files again (SIGHUP); a file that no longer parses
    leaves every option as it was."""
    LOG.info('SIGHUP: reloading the mutable options of %s', conf.config_file)
    try:
        conf.mutate_config_files()
    except Exception:
        LOG.exception('SIGHUP: the config files could not be reloaded')


def stop_all(services):
    """Stop every service at once and wait for all of them. Each RabbitMQ
    listener takes up to a poll interval to notice its stop; one after
    another those waits would add up."""

    def stop(service):
        try:
            service.stop()
        except Exception:
            LOG.exception('Stopping %s failed', service)

    threads = [
        threading.Thread(
            target=stop, args=(service,), name='stop-%d' % index, daemon=True
        )
        for index, service in enumerate(services)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
