"""The soak run: a :class:`Load` of boots and deletes on a cloud of daemons
while :class:`~harness.soak.Sampler` samples every daemon, and the
command line of ``make soak``.

``python -m harness.soak_run --duration 1800 --interval 60 --rate 4``
starts a :class:`~nimbus.testing.daemons.DaemonCloud` on fresh RabbitMQ
vhosts and MariaDB databases (one compute process simulating 10 hosts),
boots servers at ``rate`` per second keeping ``population`` of them alive,
samples every ``interval`` seconds, prints the table of
:func:`harness.soak.table` and exits 1 when a series is not flat.
Every option also reads an environment variable (``NIMBUS_SOAK_DURATION``,
``NIMBUS_SOAK_RATE``, ...).
"""

import argparse
import contextlib
import dataclasses
import os
import signal
import sys
import tempfile
import threading
import time

from harness import soak


# -- load ----------------------------------------------------------------


class Load(threading.Thread):
    """Boots a server every ``1 / rate`` seconds; once ``population``
    servers it booted are alive, each boot is followed by the delete of
    the oldest. Failed requests are counted (``failures``, with the last
    error), not retried."""

    def __init__(self, api, flavor, image, rate=4.0, population=40):
        super().__init__(daemon=True)
        self.api = api
        self.flavor = flavor
        self.image = image
        self.rate = rate
        self.population = population
        self.live = []
        self.booted = self.deleted = self.failures = 0
        self.last_error = None
        self._halt = threading.Event()

    def stop(self):
        self._halt.set()
        self.join()

    def run(self):
        began = time.monotonic()
        index = 0
        while not self._halt.is_set():
            delay = began + index / self.rate - time.monotonic()
            if delay > 0 and self._halt.wait(delay):
                break
            try:
                body = self.api.create_server(
                    'soak-%06d' % index, self.flavor, self.image
                )
                self.live.append(body['server']['id'])
                self.booted += 1
            except Exception as exc:
                self.failures += 1
                self.last_error = str(exc)[:300]
            if len(self.live) > self.population:
                victim = self.live.pop(0)
                try:
                    self.api.delete('/servers/%s' % victim)
                    self.deleted += 1
                except Exception as exc:
                    self.failures += 1
                    self.last_error = str(exc)[:300]
            index += 1


def statuses(api):
    """``{status: count}`` of every server."""
    counts = {}
    servers = api.get(
        '/servers/detail', params={'all_tenants': '1', 'limit': 100000}
    )['servers']
    for server in servers:
        counts[server['status']] = counts.get(server['status'], 0) + 1
    return counts


@dataclasses.dataclass
class Result:
    samples: list
    verdicts: list
    booted: int
    deleted: int
    failures: int
    last_error: str
    statuses: dict
    duration_s: float
    interval_s: float
    rate: float

    def flat(self):
        return all(v.flat for v in self.verdicts)

    def report(self, per_s=600.0):
        return (
            '%d boots and %d deletes in %.0f s (offered %.1f boots/s), '
            '%d failed requests%s; servers at the end: %s; %d samples '
            'every %.0f s\n%s'
            % (
                self.booted,
                self.deleted,
                self.duration_s,
                self.rate,
                self.failures,
                ' (last: %s)' % self.last_error if self.last_error else '',
                self.statuses,
                len({s.t for s in self.samples}),
                self.interval_s,
                soak.table(self.verdicts, per_s),
            )
        )


def run(
    cloud,
    api,
    flavor,
    image,
    duration_s,
    interval_s=60.0,
    warmup_s=60.0,
    rate=4.0,
    population=40,
    db_server=None,
    db_names=(),
    log=None,
    counted_slack=1,
):
    """Load ``cloud`` for ``duration_s`` seconds while sampling every
    ``interval_s`` (one sample at the start, one at the end); returns a
    :class:`Result`. ``log(line)`` hears each round. ``counted_slack``:
    how far a counted series (fds, threads, connections) may move and
    still be flat when its fitted slope is not."""
    sampler = soak.Sampler(cloud, db_server, db_names)
    load = Load(api, flavor, image, rate=rate, population=population)
    load.start()
    try:
        rounds = int(duration_s // interval_s)
        for index in range(rounds + 1):
            wait = sampler.began + index * interval_s - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            sampler.sample()
            if log:
                log(
                    '%5.0f s: %d booted, %d deleted, %d failed; %s'
                    % (
                        sampler.samples[-1].t,
                        load.booted,
                        load.deleted,
                        load.failures,
                        ', '.join(
                            '%s %.0f MiB/%d fds/%d thr/%s db%s'
                            % (
                                s.daemon,
                                s.rss,
                                s.fds,
                                s.threads,
                                '?' if s.db is None else s.db,
                                ''
                                if s.heap is None
                                else '/heap %.2f MiB' % s.heap,
                            )
                            for s in sampler.samples[-len(cloud.daemons) :]
                        ),
                    )
                )
    finally:
        load.stop()
    found = soak.verdicts(
        sampler.samples, warmup_s=warmup_s, slack=counted_slack
    )
    return Result(
        sampler.samples,
        found,
        load.booted,
        load.deleted,
        load.failures,
        load.last_error,
        statuses(api),
        duration_s,
        interval_s,
        rate,
    )


# -- the cloud and the command line --------------------------------------

# Half of the README's benchmarked sustained rate (boot_bench.py: 8.0
# ACTIVE/s through the REST API on RabbitMQ and MariaDB).
DEFAULT_RATE = 4.0
DB_NAMES = ('api', 'cell0', 'cell1', 'placement')


def parse_options(items):
    """``{section: {name: value}}`` of ``SECTION.NAME=VALUE`` items (a
    comma-separated string, or a list of them); ValueError names a bad
    one."""
    if isinstance(items, str):
        items = [i for i in items.split(',') if i.strip()]
    options = {}
    for item in items:
        key, sep, value = item.partition('=')
        section, dot, name = key.strip().rpartition('.')
        if not sep or not dot or not section or not name:
            raise ValueError(
                'option %r: expected SECTION.NAME=VALUE, e.g. '
                'DEFAULT.executor_thread_pool_size=8' % item
            )
        options.setdefault(section, {})[name] = value.strip()
    return options


@contextlib.contextmanager
def cloud(workdir, hosts=10, tracemalloc=0, report_s=60, options=None):
    """A :class:`~nimbus.testing.daemons.DaemonCloud` on fresh RabbitMQ
    vhosts and MariaDB databases with one compute process simulating
    ``hosts`` hosts, a flavor and an image: yields ``(cloud, api, flavor,
    image, db_names)``; everything is stopped and dropped after.
    ``tracemalloc``: frames each daemon's tracemalloc keeps (0: off), with
    a report in its log every ``report_s`` seconds. ``options``:
    ``{section: {name: value}}`` set in every daemon's config."""
    from nimbus.allinone.client import ComputeClient
    from nimbus.testing import daemons
    from nimbus.testing import infra

    cleanups = []
    try:
        buses = []
        for _ in range(2):
            url, cleanup = infra.rabbit_vhost()
            cleanups.append(cleanup)
            buses.append(url)
        defaults = {'report_interval': 10, 'service_down_time': 60}
        if tracemalloc:
            defaults.update(
                tracemalloc_frames=tracemalloc,
                tracemalloc_interval=int(report_s),
            )
        common = {'DEFAULT': defaults}
        for section, values in (options or {}).items():
            common.setdefault(section, {}).update(values)
        databases = {}
        for name in DB_NAMES:
            url, cleanup = infra.mysql_database()
            cleanups.append(cleanup)
            databases[name] = url
        made = daemons.DaemonCloud(
            workdir,
            buses[0],
            buses[1],
            databases,
            hosts=0,
            common_options=common,
        )
        made.prepare()
        cleanups.append(made.stop)
        made.start()
        made.start_simulated('c1', hosts)
        api = ComputeClient(made.api_url + '/v2.1')
        daemons.wait_for(
            lambda: (
                sum(
                    1
                    for h in api.get('/os-hypervisors/detail')['hypervisors']
                    if h.get('state') == 'up'
                )
                == hosts
            ),
            180,
            'the %d simulated hosts' % hosts,
            list(made.daemons.values()),
        )
        made.manage('cell', 'discover-hosts')
        flavor = api.create_flavor('soak.tiny', 1, 64, 1)['id']
        image = api.create_image('soak-image')['id']
        names = [
            url.rpartition('/')[2].partition('?')[0]
            for url in databases.values()
        ]
        yield made, api, flavor, image, names
    finally:
        for cleanup in reversed(cleanups):
            cleanup()


def _env(name, default):
    return type(default)(os.environ.get('NIMBUS_SOAK_' + name, default))


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m harness.soak_run',
        description='Boots and deletes servers at a steady rate on daemons '
        '(RabbitMQ, MariaDB) and checks that no daemon grows.',
    )
    parser.add_argument(
        '--duration',
        type=float,
        default=_env('DURATION', 1800.0),
        help='seconds of load (NIMBUS_SOAK_DURATION, default 1800)',
    )
    parser.add_argument(
        '--interval',
        type=float,
        default=_env('INTERVAL', 60.0),
        help='seconds between samples (NIMBUS_SOAK_INTERVAL, default 60)',
    )
    parser.add_argument(
        '--warmup',
        type=float,
        default=_env('WARMUP', 60.0),
        help='seconds of samples the fit leaves out (NIMBUS_SOAK_WARMUP, '
        'default 60)',
    )
    parser.add_argument(
        '--rate',
        type=float,
        default=_env('RATE', DEFAULT_RATE),
        help='boots per second (NIMBUS_SOAK_RATE, default %.1f: half the '
        'benchmarked rate)' % DEFAULT_RATE,
    )
    parser.add_argument(
        '--population',
        type=int,
        default=_env('POPULATION', 40),
        help='servers kept alive; each boot beyond deletes the oldest '
        '(NIMBUS_SOAK_POPULATION, default 40)',
    )
    parser.add_argument(
        '--hosts',
        type=int,
        default=_env('HOSTS', 10),
        help='simulated hosts (NIMBUS_SOAK_HOSTS, default 10)',
    )
    parser.add_argument(
        '--tracemalloc',
        type=int,
        default=_env('TRACEMALLOC', 0),
        help='frames of tracemalloc in every daemon, which then logs its '
        'largest and growing allocation sites every interval '
        '(NIMBUS_SOAK_TRACEMALLOC, default 0: off; slows the daemons)',
    )
    parser.add_argument(
        '--option',
        action='append',
        default=[],
        metavar='SECTION.NAME=VALUE',
        help="set an option in every daemon's config, e.g. "
        'DEFAULT.executor_thread_pool_size=8; repeatable '
        '(NIMBUS_SOAK_OPTIONS, comma-separated)',
    )
    parser.add_argument(
        '--workdir',
        default=None,
        help='config files and logs (default: a new temporary directory)',
    )
    args = parser.parse_args(argv)
    try:
        options = parse_options(
            args.option or os.environ.get('NIMBUS_SOAK_OPTIONS', '')
        )
    except ValueError as exc:
        parser.error(str(exc))
    from nimbus.testing import infra

    for what, (host, port) in (
        ('RabbitMQ', infra.rabbit_address()),
        ('MariaDB', ('127.0.0.1', 3306)),
    ):
        if not infra.port_open(host, port):
            print('%s is not listening on %s:%d' % (what, host, port))
            return 2
    # A SIGTERM (timeout(1), pkill) unwinds through the cloud's exit: the
    # daemons are stopped and the run's vhosts and databases dropped
    # (without this they outlived the run).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    workdir = args.workdir or tempfile.mkdtemp(prefix='nimbus-soak-')
    print('soak: logs and configs in %s' % workdir, flush=True)
    with cloud(
        workdir, args.hosts, args.tracemalloc, args.interval, options
    ) as (made, api, flavor, image, names):
        result = run(
            made,
            api,
            flavor,
            image,
            args.duration,
            interval_s=args.interval,
            warmup_s=args.warmup,
            rate=args.rate,
            population=args.population,
            db_server=infra.server_url('mysql'),
            db_names=names,
            log=lambda line: print(line, flush=True),
        )
    print(result.report())
    return 0 if result.flat() else 1


if __name__ == '__main__':
    sys.exit(main())
