"""Soak: a steady mix of boots and deletes for a long time, and proof that
no daemon's resources creep.

A :class:`Sampler` reads, for every daemon of a
:class:`~nimbus.testing.daemons.DaemonCloud`, its resident memory (RSS),
open file descriptors and threads (the process and its children, through
psutil), and the database connections it holds (MariaDB's
``information_schema.processlist`` for the cloud's databases, each
connection attributed to the daemon owning its client port).
:func:`verdicts` fits a least-squares line to every series after the
warm-up and calls it flat when the line rises less than ``limit`` (1%) of the series' mean per ``per_s`` (10
minutes). A counted series (descriptors, threads, connections) moves in
whole units, so one that stays within one unit after the warm-up is flat
too: a pool that grows by one connection once in a short run is not a
leak the run can resolve.

With tracemalloc on in the daemons (``[DEFAULT] tracemalloc_frames``,
:mod:`nimbus.cmd.memtrace`) the sampler also reads each daemon's
Python heap, as its last report in its log says, into a ``heap`` series
judged like the others: RSS that rises while the heap holds is the
allocator (arenas, thread stacks) or C libraries, not Python objects.
Each verdict also carries the slope of the second half of its samples: a
warm-up shows as a late slope well under the whole run's.

:mod:`harness.soak_run` drives it (``make soak``).
"""

import dataclasses
import os
import re
import time

# what each series is, how it prints, and whether it counts whole units
SERIES = (
    ('rss', 'RSS MiB', False),
    ('fds', 'open fds', True),
    ('threads', 'threads', True),
    ('db', 'DB conns', True),
)
# only when the daemons trace their allocations
HEAP = ('heap', 'heap MiB', False)


@dataclasses.dataclass
class Sample:
    t: float
    daemon: str
    rss: float
    fds: int
    threads: int
    db: int
    heap: object = None  # MiB tracemalloc traces; None: not traced


def slope(points):
    """The least-squares slope of ``[(t, value), ...]`` (0.0 with fewer
    than two distinct times)."""
    n = len(points)
    if n < 2:
        return 0.0
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    var_t = sum((t - mean_t) ** 2 for t, _ in points)
    if var_t == 0:
        return 0.0
    cov = sum((t - mean_t) * (v - mean_v) for t, v in points)
    return cov / var_t


@dataclasses.dataclass
class Verdict:
    daemon: str
    series: str
    samples: int
    mean: float
    first: float
    last: float
    slope_per_period: float  # fitted change per ``per_s``
    pct_per_period: float  # of the mean; 0.0 for an all-zero series
    flat: bool
    late_pct: object = None  # the same fit on the second half alone


def verdict(
    points,
    daemon='',
    series='',
    warmup_s=60.0,
    per_s=600.0,
    limit=0.01,
    counted=False,
    slack=1,
):
    """Is the series ``[(t, value), ...]`` flat after ``warmup_s``?

    Flat: the fitted rise per ``per_s`` is under ``limit`` of the mean
    (a falling series is flat), or, for a ``counted`` series, its values
    stay within ``slack`` units."""
    kept = [(t, v) for t, v in points if t >= warmup_s]
    if not kept:
        raise ValueError(
            'no sample of %s %s after the %.0f s warm-up'
            % (daemon, series, warmup_s)
        )
    values = [v for _, v in kept]
    mean = sum(values) / len(values)
    rate = slope(kept)
    per_period = rate * per_s
    pct = 100.0 * per_period / mean if mean else 0.0
    late = late_slope_pct(kept, per_s)
    flat = per_period <= limit * abs(mean) or (mean == 0 and rate <= 0)
    if not flat and counted:
        flat = max(values) - min(values) <= slack
    return Verdict(
        daemon,
        series,
        len(kept),
        mean,
        values[0],
        values[-1],
        per_period,
        pct,
        flat,
        late,
    )


def late_slope_pct(points, per_s=600.0):
    """The fitted rise per ``per_s`` of the second half (in time) of
    ``points``, in % of that half's mean; None with fewer than 3 points
    in it. Not part of the verdict: it says whether a rise slows down."""
    if not points:
        return None
    ts = [t for t, _ in points]
    middle = (min(ts) + max(ts)) / 2.0
    half = [(t, v) for t, v in points if t >= middle]
    if len(half) < 3:
        return None
    mean = sum(v for _, v in half) / len(half)
    return 100.0 * slope(half) * per_s / mean if mean else 0.0


def series_of(samples):
    """The :data:`SERIES` the samples carry (the heap only when every
    sample of some daemon has it)."""
    traced = any(s.heap is not None for s in samples)
    return SERIES + ((HEAP,) if traced else ())


def verdicts(samples, warmup_s=60.0, per_s=600.0, limit=0.01, slack=1):
    """One :class:`Verdict` per daemon and series of ``samples``
    (``slack``: see :func:`verdict`)."""
    by_daemon = {}
    for sample in samples:
        by_daemon.setdefault(sample.daemon, []).append(sample)
    found = []
    for daemon in sorted(by_daemon):
        rows = by_daemon[daemon]
        for name, _label, counted in series_of(rows):
            points = [
                (s.t, getattr(s, name))
                for s in rows
                if getattr(s, name) is not None
            ]
            if name == HEAP[0] and not any(t >= warmup_s for t, _ in points):
                continue  # no report after the warm-up yet
            found.append(
                verdict(
                    points,
                    daemon,
                    name,
                    warmup_s,
                    per_s,
                    limit,
                    counted,
                    slack,
                )
            )
    return found


def table(found, per_s=600.0):
    """The verdicts as Markdown: one row per daemon, each series as
    ``first -> last (+x.xx%/10 min, 2nd half +y.yy%)``."""
    names = {v.series for v in found}
    kinds = [k for k in SERIES + (HEAP,) if k[0] in names]
    labels = [label for _, label, _ in kinds]
    period = '%d min' % (per_s / 60) if per_s % 60 == 0 else '%d s' % per_s
    lines = [
        '| daemon | ' + ' | '.join(labels) + ' | flat |',
        '|' + '---|' * (len(labels) + 2),
    ]
    by_daemon = {}
    for v in found:
        by_daemon.setdefault(v.daemon, {})[v.series] = v
    for daemon, series in by_daemon.items():
        cells = []
        for name, _label, counted in kinds:
            v = series.get(name)
            if v is None:
                cells.append('-')
                continue
            fmt = '%.0f' if counted else '%.1f'
            late = (
                ''
                if counted or v.late_pct is None
                else ', 2nd half %+.2f%%' % v.late_pct
            )
            cells.append(
                (fmt + ' → ' + fmt + ' (%+.2f%%/%s%s)')
                % (v.first, v.last, v.pct_per_period, period, late)
                + ('' if v.flat else ' **NOT FLAT**')
            )
        flat = all(v.flat for v in series.values())
        lines.append(
            '| %s | %s | %s |'
            % (daemon, ' | '.join(cells), 'yes' if flat else 'NO')
        )
    return '\n'.join(lines)


# -- sampling ------------------------------------------------------------


def _tree(pid):
    import psutil

    root = psutil.Process(pid)
    return [root] + root.children(recursive=True)


def process_stats(pid):
    """``(rss MiB, open fds, threads, {(local port, remote port), ...})``
    of process ``pid`` and its children: a TCP connection is known by both
    ports, since Linux hands the same local port to two connections that
    go to different servers (one daemon's to RabbitMQ, another's to
    MariaDB)."""
    import psutil

    rss = fds = threads = 0
    ports = set()
    for proc in _tree(pid):
        try:
            with proc.oneshot():
                rss += proc.memory_info().rss
                fds += proc.num_fds()
                threads += proc.num_threads()
            for conn in proc.net_connections(kind='tcp'):
                if conn.laddr and conn.raddr:
                    ports.add((conn.laddr.port, conn.raddr.port))
        except psutil.NoSuchProcess:
            continue
    return rss / 1048576.0, fds, threads, ports


def db_client_ports(server_url, databases, retries=5):
    """The client ports of MariaDB's connections to ``databases`` (names),
    from ``information_schema.processlist`` (asked again ``retries`` times,
    2 s apart, while the server refuses a connection)."""
    import sqlalchemy as sa

    engine = sa.create_engine(server_url + '/', poolclass=sa.pool.NullPool)
    query = sa.text(
        'SELECT host FROM information_schema.processlist WHERE db IN :names'
    ).bindparams(sa.bindparam('names', expanding=True))
    try:
        for attempt in range(retries + 1):
            try:
                with engine.connect() as conn:
                    rows = conn.execute(
                        query, {'names': list(databases)}
                    ).all()
                break
            except sa.exc.OperationalError:
                # a shared server out of connections for a moment
                if attempt == retries:
                    raise
                time.sleep(2.0)
    finally:
        engine.dispose()
    ports = []
    for (host,) in rows:
        _, _, port = (host or '').rpartition(':')
        if port.isdigit():
            ports.append(int(port))
    return ports


def db_server_port(server_url):
    """The TCP port of the database server at ``server_url`` (None: no
    server)."""
    if not server_url:
        return None
    import sqlalchemy as sa

    url = sa.engine.make_url(server_url)
    return url.port or _DEFAULT_PORTS.get(url.get_backend_name())


_DEFAULT_PORTS = {'mysql': 3306, 'mariadb': 3306, 'postgresql': 5432}


_REPORT = re.compile(rb'tracemalloc report \d+: Python heap ([0-9.]+) KiB')


def traced_heap(log_file, tail=1 << 20):
    """The Python heap (MiB) of the last tracemalloc report in the last
    ``tail`` bytes of ``log_file`` (None: no report there)."""
    try:
        with open(log_file, 'rb') as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - tail))
            data = f.read()
    except (FileNotFoundError, TypeError):
        return None
    found = _REPORT.findall(data)
    return float(found[-1]) / 1024.0 if found else None


class Sampler:
    """Samples every daemon of ``cloud`` (``{name: Daemon}`` in
    ``cloud.daemons``); ``db_server`` and ``db_names`` say where to count
    database connections (None: count none)."""

    def __init__(self, cloud, db_server=None, db_names=()):
        self.cloud = cloud
        self.db_server = db_server
        self.db_names = list(db_names)
        self.db_port = db_server_port(db_server)
        self.samples = []
        self.began = time.monotonic()

    def sample(self):
        import sqlalchemy as sa

        now = time.monotonic() - self.began
        try:
            client_ports = (
                db_client_ports(self.db_server, self.db_names)
                if self.db_server and self.db_names
                else []
            )
        except sa.exc.OperationalError:
            # the shared server out of connections past the retries: this
            # round's connection counts are unknown (None), not zero
            client_ports = None
        for name, daemon in sorted(self.cloud.daemons.items()):
            if not daemon.alive():
                raise RuntimeError(
                    '%s is not running:\n%s' % (name, daemon.tail())
                )
            rss, fds, threads, ports = process_stats(daemon.process.pid)
            db = (
                None
                if client_ports is None
                else sum(
                    1 for port in client_ports if (port, self.db_port) in ports
                )
            )
            heap = traced_heap(daemon.log_file)
            self.samples.append(Sample(now, name, rss, fds, threads, db, heap))
