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

:mod:`nimbus.testing.soak_run` drives it (``make soak``).
"""

import dataclasses
import time

# what each series is, how it prints, and whether it counts whole units
SERIES = (
    ('rss', 'RSS MiB', False),
    ('fds', 'open fds', True),
    ('threads', 'threads', True),
    ('db', 'DB conns', True),
)


@dataclasses.dataclass
class Sample:
    t: float
    daemon: str
    rss: float
    fds: int
    threads: int
    db: int


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


def verdict(
    points,
    daemon='',
    series='',
    warmup_s=60.0,
    per_s=600.0,
    limit=0.01,
    counted=False,
):
    """Is the series ``[(t, value), ...]`` flat after ``warmup_s``?

    Flat: the fitted rise per ``per_s`` is under ``limit`` of the mean
    (a falling series is flat), or, for a ``counted`` series, its values
    stay within one unit."""
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
    flat = per_period <= limit * abs(mean) or (mean == 0 and rate <= 0)
    if not flat and counted:
        flat = max(values) - min(values) <= 1
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
    )


def verdicts(samples, warmup_s=60.0, per_s=600.0, limit=0.01):
    """One :class:`Verdict` per daemon and series of ``samples``."""
    by_daemon = {}
    for sample in samples:
        by_daemon.setdefault(sample.daemon, []).append(sample)
    found = []
    for daemon in sorted(by_daemon):
        rows = by_daemon[daemon]
        for name, _label, counted in SERIES:
            found.append(
                verdict(
                    [(s.t, getattr(s, name)) for s in rows],
                    daemon,
                    name,
                    warmup_s,
                    per_s,
                    limit,
                    counted,
                )
            )
    return found


def table(found, per_s=600.0):
    """The verdicts as Markdown: one row per daemon, each series as
    ``first -> last (+x.xx%/10 min)``."""
    labels = [label for _, label, _ in SERIES]
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
        for name, _label, counted in SERIES:
            v = series[name]
            fmt = '%.0f' if counted else '%.1f'
            cells.append(
                (fmt + ' → ' + fmt + ' (%+.2f%%/%s)')
                % (v.first, v.last, v.pct_per_period, period)
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
    """``(rss MiB, open fds, threads, {local TCP port, ...})`` of process
    ``pid`` and its children."""
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
                if conn.laddr:
                    ports.add(conn.laddr.port)
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


class Sampler:
    """Samples every daemon of ``cloud`` (``{name: Daemon}`` in
    ``cloud.daemons``); ``db_server`` and ``db_names`` say where to count
    database connections (None: count none)."""

    def __init__(self, cloud, db_server=None, db_names=()):
        self.cloud = cloud
        self.db_server = db_server
        self.db_names = list(db_names)
        self.samples = []
        self.began = time.monotonic()

    def sample(self):
        now = time.monotonic() - self.began
        client_ports = (
            db_client_ports(self.db_server, self.db_names)
            if self.db_server and self.db_names
            else []
        )
        for name, daemon in sorted(self.cloud.daemons.items()):
            if not daemon.alive():
                raise RuntimeError(
                    '%s is not running:\n%s' % (name, daemon.tail())
                )
            rss, fds, threads, ports = process_stats(daemon.process.pid)
            db = sum(1 for port in client_ports if port in ports)
            self.samples.append(Sample(now, name, rss, fds, threads, db))
