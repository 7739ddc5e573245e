"""Many simulated hosts in one process, at a flat thread count.

A per-host agent (nimbus-compute, an accelerator agent) normally runs one
host per process: an RPC server (a broker connection, a polling thread and
an executor pool), a thread per periodic task and a worker pool. Running
N hosts that way costs N of each. :class:`HostGroup` runs N hosts of one
agent on shared machinery:

- ONE RPC server (:class:`nimbus.messaging_internals.multiserver.MultiServer`) on
  ONE broker connection consumes every host's ``<topic>.<host>`` queue and
  dispatches each message to that host's endpoints;
- ONE bounded worker pool (``workers`` threads) runs the hosts'
  startups, their periodic tasks and the agent's own background work
  (builds); the RPC server's executor is a second, small bounded pool
  (``rpc_workers``) for the handlers, which only hand work over;
- ONE :class:`Ticker` thread runs every host's periodic tasks on the same
  pool: each task (one interval, one name) of every host is ONE
  :class:`Wheel`, whose hosts are spread over slices of the interval so a
  thousand hosts do not report in the same second, and one tick runs a
  slice's calls in a row - no timer, no pool hand-off per host.

An agent plugs in by giving, per host, an object with:

``start()``
    blocking startup (register, report); returns nothing. Runs on the
    pool, ``start_concurrency`` hosts at a time;
``endpoints``
    the RPC endpoints of the host (served once ``start()`` returned);
``periodic_tasks()``
    ``[(interval_seconds, callable), ...]``;
``stop()`` / ``kill()``
    clean stop / abandon everything (``kill`` optional).

Host names are :func:`host_names` (``<base>-0001`` ...). nimbus-compute
uses this through :mod:`nimbus.compute.simulated`
(``nimbus-compute --simulated-hosts N``, ``nimbus all-in-one --hosts N``).
"""

import concurrent.futures as futures
import heapq
import itertools
import queue
import random
import threading
import time

from oslo_config import cfg
from oslo_log import log as logging

from nimbus.messaging_internals import multiserver

LOG = logging.getLogger(__name__)


def host_names(base, count):
    """``<base>-0001`` ... ``<base>-<count>`` (wider past 9999)."""
    width = max(4, len(str(count)))
    return ['%s-%0*d' % (base, width, i) for i in range(1, count + 1)]


class Ticker:
    """Runs many periodic tasks from one thread, on a shared pool.

    ``add(interval, func, first=None)``: ``func`` runs every ``interval``
    seconds, the first time after ``first`` seconds (default: a random
    point in the second interval - the host just did the work at its
    start - so tasks added together spread out). A
    task whose previous run has not finished skips its turn. Exceptions
    are logged; the task keeps its schedule.
    """

    def __init__(self, pool, name='ticker', seed=None):
        self._pool = pool
        self._heap = []
        self._cond = threading.Condition()
        self._stopped = False
        self._counter = itertools.count()
        self._random = random.Random(seed)
        self._cancelled = set()
        self._running = set()
        self._thread = threading.Thread(
            target=self._loop, daemon=True, name=name
        )
        self._thread.start()

    def add(self, interval, func, first=None, name=None):
        """Schedule ``func``; returns a handle for :meth:`cancel`."""
        if first is None:
            first = interval + self._random.uniform(0, interval)
        handle = next(self._counter)
        with self._cond:
            heapq.heappush(
                self._heap,
                (time.monotonic() + first, handle, interval, func, name),
            )
            self._cond.notify()
        return handle

    def cancel(self, handle):
        with self._cond:
            self._cancelled.add(handle)

    def _run(self, handle, func, name):
        try:
            func()
        except Exception:
            LOG.exception(
                'Periodic task %s failed',
                name or getattr(func, '__name__', func),
            )
        finally:
            with self._cond:
                self._running.discard(handle)

    def _loop(self):
        while True:
            with self._cond:
                while not self._stopped and (
                    not self._heap or self._heap[0][0] > time.monotonic()
                ):
                    wait = (
                        self._heap[0][0] - time.monotonic()
                        if self._heap
                        else None
                    )
                    self._cond.wait(wait)
                if self._stopped:
                    return
                due, handle, interval, func, name = heapq.heappop(self._heap)
                if handle in self._cancelled:
                    self._cancelled.discard(handle)
                    continue
                heapq.heappush(
                    self._heap,
                    (
                        max(due + interval, time.monotonic()),
                        handle,
                        interval,
                        func,
                        name,
                    ),
                )
                if handle in self._running:
                    continue
                self._running.add(handle)
            try:
                self._pool.submit(self._run, handle, func, name)
            except RuntimeError:  # the pool is shut down
                return

    def stop(self):
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self._thread.join(timeout=5)


class Wheel:
    """One periodic task of many hosts on ONE ticker entry.

    The hosts are spread over ``slots`` slices of ``interval`` (a host
    joins the slice with the fewest); every ``interval / slots`` seconds
    the next slice's calls run one after the other on one pool thread. A
    thousand hosts' task with a 60 s interval is then one tick a second
    running about 17 calls, instead of a thousand timers each waking a
    pool thread. A call that raises is logged; the slice goes on. While
    a slice still runs, the next waits for the following tick (the
    ticker does not start a task twice), so a slow slice delays the
    others rather than piling up.
    """

    def __init__(
        self, ticker, interval, name, slots=None, prepare=None, finish=None
    ):
        self.interval = interval
        self.name = name
        # ``prepare(hosts)``: called with a slice's host names before its
        # calls (one batched read for them all); a failure is logged and
        # the calls run anyway. ``finish(hosts)``: called after them (one
        # batched write of what they left); a failure is logged.
        self.prepare = prepare
        self.finish = finish
        count = slots or max(1, min(60, int(interval)))
        self._slices = [{} for _ in range(count)]
        self._next = 0
        self._lock = threading.Lock()
        step = interval / count
        self.handle = ticker.add(step, self.tick, first=step, name=name)

    def __len__(self):
        with self._lock:
            return sum(len(part) for part in self._slices)

    def add(self, host, func):
        with self._lock:
            min(self._slices, key=len)[host] = func

    def remove(self, host):
        with self._lock:
            for part in self._slices:
                part.pop(host, None)

    def tick(self):
        """Run the next slice's calls; returns the hosts run."""
        with self._lock:
            part = list(self._slices[self._next].items())
            self._next = (self._next + 1) % len(self._slices)
        if part and self.prepare is not None:
            try:
                self.prepare([host for host, _func in part])
            except Exception:
                LOG.exception(
                    'Preparing %s of %d hosts failed', self.name, len(part)
                )
        for host, func in part:
            try:
                func()
            except Exception:
                LOG.exception('Periodic task %s of %s failed', self.name, host)
        if part and self.finish is not None:
            try:
                self.finish([host for host, _func in part])
            except Exception:
                LOG.exception(
                    'Finishing %s of %d hosts failed', self.name, len(part)
                )
        return [host for host, _func in part]


class HostGroup:
    """N hosts of one agent on one transport, one pool and one ticker.

    ``transport`` is the oslo.messaging transport all hosts share;
    ``topic``/``version`` their RPC target; ``workers`` the size of the
    shared pool; ``rpc_workers`` the RPC server's executor (handlers that
    only hand work to the pool need few); ``start_concurrency`` how many
    hosts start at once.
    """

    def __init__(
        self,
        transport,
        topic,
        version='1.0',
        workers=64,
        rpc_workers=8,
        start_concurrency=16,
        seed=None,
    ):
        self.pool = futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix='sim-worker'
        )
        self.ticker = Ticker(self.pool, seed=seed)
        self.rpc = multiserver.MultiServer(
            transport, topic, version, workers=rpc_workers
        )
        self.start_concurrency = start_concurrency
        self.hosts = {}
        # (interval, task name) -> Wheel; host -> the wheels it is on.
        self.wheels = {}
        self._tasks = {}
        # task name -> (prepare(hosts), finish(hosts)) of its wheels
        # (:meth:`prepare`).
        self._prepares = {}
        self._lock = threading.Lock()
        self._rpc_started = False
        # Servers whose queues :meth:`declare` declared ahead of their start.
        self._declared = set()

    def declare(self, names):
        """Declare the queues of the hosts ``names`` now, ahead of
        :meth:`start_hosts` (which then does not declare them again): a
        message sent to one from now on waits for its host. For a group
        that makes its hosts known (their node records) before they
        start."""
        names = [n for n in names if n not in self._declared]
        self._start_rpc()
        self.rpc.declare(names)
        self._declared.update(names)

    def prepare(self, task, func, finish=None):
        """Call ``func(hosts)`` before each slice of the hosts' periodic
        ``task`` (by name) runs: the agent reads once, for the slice,
        what each host's call would read on its own; and ``finish(hosts)``
        (when given) after the slice ran: the agent sends once what each
        host's call left for it."""
        with self._lock:
            self._prepares[task] = (func, finish)
            for (_interval, name), wheel in self.wheels.items():
                if name == task:
                    wheel.prepare, wheel.finish = func, finish

    def _start_rpc(self):
        if not self._rpc_started:
            self.rpc.start()
            self._rpc_started = True

    def _serve(self, started):
        self.rpc.add_many({name: host.endpoints for name, host in started})
        self._start_rpc()
        for name, host in started:
            wheels = []
            for interval, func in host.periodic_tasks():
                wheel = self._wheel(
                    interval, getattr(func, '__name__', 'task')
                )
                wheel.add(name, func)
                wheels.append(wheel)
            with self._lock:
                self.hosts[name] = host
                self._tasks[name] = wheels

    def _wheel(self, interval, task):
        """The :class:`Wheel` of every host's ``task`` run each
        ``interval`` seconds (made on first use)."""
        with self._lock:
            wheel = self.wheels.get((interval, task))
            if wheel is None:
                prepare, finish = self._prepares.get(task, (None, None))
                wheel = self.wheels[(interval, task)] = Wheel(
                    self.ticker, interval, task, prepare=prepare, finish=finish
                )
            return wheel

    def start_hosts(self, hosts, on_started=None):
        """Start ``hosts`` (``[(name, host)]``), at most
        ``start_concurrency`` at a time on the pool; hosts that are up are
        served in groups as they come (no batch waits for its slowest).

        Returns the names that failed to start (logged) - the others run.
        ``on_started(done, total)`` is called after every group served.
        """
        hosts = list(hosts)
        # Consume (and so answer the broker's heartbeats) from the start.
        self._start_rpc()
        # Every host's queue exists before the host reports itself (and
        # so can be chosen): a build sent before it is served waits.
        self.rpc.declare(
            name for name, _host in hosts if name not in self._declared
        )
        slots = threading.Semaphore(max(1, self.start_concurrency))
        ready = queue.Queue()

        def run(name, host):
            try:
                host.start()
                ready.put((name, host, None))
            except Exception as exc:  # noqa: BLE001 - a host's start failure is reported
                ready.put((name, host, exc))
            finally:
                slots.release()

        def feed():
            for name, host in hosts:
                slots.acquire()
                self.pool.submit(run, name, host)

        threading.Thread(target=feed, daemon=True, name='sim-start').start()
        failed, done = [], 0
        while done < len(hosts):
            group = [ready.get()]
            while True:
                try:
                    group.append(ready.get_nowait())
                except queue.Empty:
                    break
            done += len(group)
            for name, _host, exc in group:
                if exc is not None:
                    LOG.error(
                        'Simulated host %s failed to start: %s', name, exc
                    )
                    failed.append(name)
            self._serve(
                [(name, host) for name, host, exc in group if exc is None]
            )
            if on_started is not None:
                on_started(done, len(hosts))
        return failed

    def start_host(self, name, host):
        """Start one host now (blocking) and serve it."""
        self._start_rpc()
        self.rpc.declare([name])
        host.start()
        self._serve([(name, host)])
        return host

    def _forget(self, name):
        with self._lock:
            host = self.hosts.pop(name)
            wheels = self._tasks.pop(name, [])
        for wheel in wheels:
            wheel.remove(name)
        self.rpc.remove(name)
        return host

    def stop_host(self, name):
        """Stop serving one host, then stop it cleanly."""
        self._forget(name).stop()

    def kill_host(self, name):
        """Stop serving one host and abandon its work (``kill -9``)."""
        host = self._forget(name)
        getattr(host, 'kill', host.stop)()

    def stop(self):
        """Stop the ticker and the RPC server, then every host."""
        self.ticker.stop()
        if self._rpc_started:
            self.rpc.stop()
        with self._lock:
            hosts = list(self.hosts.items())
            self.hosts.clear()
            self._tasks.clear()
        for name, host in hosts:
            try:
                host.stop()
            except Exception:
                LOG.exception('Stopping simulated host %s failed', name)
        self.pool.shutdown(wait=True, cancel_futures=True)


SIMULATED_OPTS = [
    cfg.IntOpt(
        'workers',
        default=64,
        min=1,
        help='Threads of the one pool the simulated hosts of a '
        'process share (startups, periodic tasks, builds). The '
        'thread count of the process does not grow with the '
        'number of hosts.',
    ),
    cfg.IntOpt(
        'rpc_workers',
        default=8,
        min=1,
        help='Threads of the one RPC server the simulated hosts '
        'share (its handlers only hand work to the pool).',
    ),
    cfg.IntOpt(
        'start_concurrency',
        default=16,
        min=1,
        help='Simulated hosts started (registered and reported to '
        'placement) at the same time.',
    ),
]


# register_opts and list_opts: the pair each option module has (the
# services and oslo-config-generator call them); alike by design.
def register_opts(conf):
    conf.register_opts(SIMULATED_OPTS, group='simulated_hosts')


def list_opts():
    return [('simulated_hosts', SIMULATED_OPTS)]


def from_conf(conf, transport, topic, version='1.0', seed=None):
    """A :class:`HostGroup` sized by ``[simulated_hosts]``."""
    group = conf.simulated_hosts
    return HostGroup(
        transport,
        topic,
        version,
        workers=group.workers,
        rpc_workers=group.rpc_workers,
        start_concurrency=group.start_concurrency,
        seed=seed,
    )
