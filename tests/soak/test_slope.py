"""The soak's verdict logic: least-squares slopes and what counts as flat."""

import math

from hypothesis import given
from hypothesis import strategies as st
import pytest

from harness import soak

times = st.lists(
    st.floats(min_value=0, max_value=1e5, allow_nan=False),
    min_size=2,
    max_size=40,
    unique=True,
)
coefficient = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False)


@given(times, coefficient, coefficient)
def test_slope_of_a_line_is_its_coefficient(ts, a, b):
    points = [(t, a * t + b) for t in ts]
    spread = max(ts) - min(ts)
    if spread < 1e-3:
        return  # too close together for the fit to mean anything
    assert math.isclose(soak.slope(points), a, rel_tol=1e-6, abs_tol=1e-6)


@given(times, st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
def test_constant_series_has_no_slope(ts, value):
    assert soak.slope([(t, value) for t in ts]) == pytest.approx(0, abs=1e-9)


@given(
    st.lists(
        st.floats(min_value=-1e3, max_value=1e3, allow_nan=False),
        min_size=3,
        max_size=30,
    )
)
def test_slope_does_not_depend_on_order_or_shift(values):
    points = [(float(i * 60), v) for i, v in enumerate(values)]
    shifted = [(t + 1234.5, v) for t, v in reversed(points)]
    assert soak.slope(shifted) == pytest.approx(
        soak.slope(points), rel=1e-9, abs=1e-9
    )


def test_slope_needs_two_times():
    assert soak.slope([]) == 0.0
    assert soak.slope([(5.0, 1.0)]) == 0.0
    assert soak.slope([(5.0, 1.0), (5.0, 9.0)]) == 0.0


def test_warmup_samples_are_left_out():
    # memory that grows during the first minute, then holds
    points = [(0, 50.0), (30, 80.0)] + [(t, 100.0) for t in range(60, 600, 60)]
    v = soak.verdict(points, warmup_s=60)
    assert v.flat
    assert v.samples == 9
    assert v.slope_per_period == pytest.approx(0)
    assert not soak.verdict(points, warmup_s=0).flat


def test_one_percent_per_ten_minutes_of_the_mean():
    # mean about 100: 0.9 per 10 min is flat, 1.1 is not
    def series(per_10_min):
        return [(t, 100 + per_10_min * t / 600) for t in range(60, 1860, 60)]

    below = soak.verdict(series(0.9))
    above = soak.verdict(series(1.1))
    assert below.flat and not above.flat
    assert above.slope_per_period == pytest.approx(1.1)
    assert above.pct_per_period == pytest.approx(1.1 / above.mean * 100)


def test_a_falling_series_is_flat():
    points = [(t, 200 - t / 10) for t in range(60, 1860, 60)]
    assert soak.verdict(points).flat


def test_counted_series_tolerate_one_step():
    # a pool growing by one connection in a three-minute run
    points = [(60, 4), (80, 4), (100, 4), (120, 5), (140, 5), (160, 5)]
    assert not soak.verdict(points).flat
    assert soak.verdict(points, counted=True).flat
    # two steps over the same window are a real rise
    climbing = [(60, 4), (80, 4), (100, 5), (120, 5), (140, 6), (160, 6)]
    assert not soak.verdict(climbing, counted=True).flat


def test_all_zero_series_is_flat():
    # the compute holds no database connection at all
    assert soak.verdict([(t, 0) for t in range(60, 300, 20)]).flat


def test_no_sample_after_warmup_is_an_error():
    with pytest.raises(ValueError, match='warm-up'):
        soak.verdict([(0, 1.0), (30, 1.0)], 'api', 'rss', warmup_s=60)


def test_verdicts_and_table_per_daemon():
    samples = []
    for t in range(0, 300, 20):
        samples.append(soak.Sample(t, 'api', 80.0, 30, 12, 3))
        samples.append(soak.Sample(t, 'scheduler', 60.0 + t, 25, 10, 2))
    found = soak.verdicts(samples, warmup_s=60)
    assert len(found) == 2 * len(soak.SERIES)
    bad = [(v.daemon, v.series) for v in found if not v.flat]
    assert bad == [('scheduler', 'rss')]
    text = soak.table(found)
    lines = text.splitlines()
    assert lines[0].startswith('| daemon | RSS MiB | open fds')
    api_row = [line for line in lines if line.startswith('| api ')][0]
    assert api_row.endswith('| yes |')
    scheduler_row = [line for line in lines if 'scheduler' in line][0]
    assert 'NOT FLAT' in scheduler_row and scheduler_row.endswith('| NO |')
    assert '120.0 → 340.0' in scheduler_row


def test_late_slope_shows_a_warmup_slowing_down():
    # memory rising fast, then barely: the whole fit is steep, the
    # second half's is not
    points = [
        (t, 100 + 10 * (1 - math.exp(-t / 300))) for t in range(60, 1860, 60)
    ]
    v = soak.verdict(points)
    assert not v.flat
    assert v.late_pct < v.pct_per_period / 5
    # a steady leak keeps its slope in the second half
    leak = soak.verdict([(t, 100 + t / 100) for t in range(60, 1860, 60)])
    assert leak.late_pct == pytest.approx(leak.pct_per_period, rel=0.2)
    assert soak.late_slope_pct([(60, 1.0), (120, 1.0)]) is None


def test_heap_series_from_the_daemons_reports(tmp_path):
    log = tmp_path / 'scheduler.log'
    log.write_text(
        'x INFO nimbus.cmd.memtrace [-] tracemalloc report 1: Python heap'
        ' 2048.0 KiB traced (peak 4096.0 KiB)\nlargest sites:\n'
        'x INFO nimbus.cmd.memtrace [-] tracemalloc report 2: Python heap'
        ' 3072.0 KiB traced (peak 4096.0 KiB), +1024.0 KiB since report 1\n'
        'x INFO nimbus.scheduler.driver [-] Selected c1-0001\n'
    )
    assert soak.traced_heap(str(log)) == 3.0
    assert soak.traced_heap(str(tmp_path / 'absent.log')) is None
    log.write_text('no report\n')
    assert soak.traced_heap(str(log)) is None

    samples = []
    for t in range(0, 300, 20):
        # RSS rising, heap holding; the API traced nothing
        samples.append(soak.Sample(t, 'scheduler', 100.0 + t, 9, 70, 2, 9.5))
        samples.append(soak.Sample(t, 'api', 80.0, 12, 20, 3))
    found = soak.verdicts(samples, warmup_s=60)
    heap = [v for v in found if v.series == 'heap']
    assert [(v.daemon, v.flat) for v in heap] == [('scheduler', True)]
    text = soak.table(found)
    assert text.splitlines()[0].endswith('| heap MiB | flat |')
    api_row = [line for line in text.splitlines() if '| api ' in line][0]
    assert '| - |' in api_row
    assert '9.5 → 9.5' in text


def test_a_round_without_the_database_counts_no_connections(monkeypatch):
    import os
    import types

    import sqlalchemy as sa

    def refused(server, names):
        raise sa.exc.OperationalError('SELECT', {}, Exception('1040'))

    monkeypatch.setattr(soak, 'db_client_ports', refused)
    daemon = types.SimpleNamespace(
        alive=lambda: True,
        process=types.SimpleNamespace(pid=os.getpid()),
        log_file=None,
    )
    cloud = types.SimpleNamespace(daemons={'scheduler': daemon})
    sampler = soak.Sampler(cloud, 'mysql+pymysql://x', ['api'])
    sampler.sample()
    (sample,) = sampler.samples
    assert sample.db is None and sample.rss > 0
    # such rounds are left out of the connections' fit
    rows = [soak.Sample(t, 'scheduler', 50.0, 9, 70, 3) for t in (60, 80)]
    rows += [soak.Sample(100, 'scheduler', 50.0, 9, 70, None)]
    db = [v for v in soak.verdicts(rows) if v.series == 'db'][0]
    assert db.samples == 2 and db.flat


def test_counted_slack_bounds_a_step():
    """A counted series that steps up by two (a pool's high-water mark)
    is flat with a slack of three, not with the default one; a leak per
    request (a rise every sample) is never flat."""
    step = [(t, 3 if t < 100 else 5) for t in range(60, 181, 20)]
    assert not soak.verdict(step, counted=True).flat
    assert soak.verdict(step, counted=True, slack=3).flat
    leak = [(t, 10 + t) for t in range(60, 181, 20)]
    assert not soak.verdict(leak, counted=True, slack=3).flat


def test_a_shared_local_port_to_another_server_is_no_database_connection(
    monkeypatch,
):
    """Linux gives one local port to two connections bound for different
    servers: the compute's connection to RabbitMQ from the port of the
    API's MariaDB connection is not the compute's."""
    import types

    monkeypatch.setattr(soak, 'db_client_ports', lambda server, names: [40001])
    conns = {
        1: (120.0, 12, 20, {(40001, 3306)}),  # api -> MariaDB
        2: (90.0, 25, 30, {(40001, 5672), (40002, 8778)}),  # compute
    }
    monkeypatch.setattr(soak, 'process_stats', lambda pid: conns[pid])

    def daemon(pid):
        return types.SimpleNamespace(
            alive=lambda: True,
            process=types.SimpleNamespace(pid=pid),
            log_file=None,
        )

    cloud = types.SimpleNamespace(daemons={'api': daemon(1), 'c1': daemon(2)})
    sampler = soak.Sampler(cloud, 'mysql+pymysql://root@127.0.0.1', ['api'])
    sampler.sample()
    db = {s.daemon: s.db for s in sampler.samples}
    assert db == {'api': 1, 'c1': 0}


def test_database_server_port_from_its_url():
    assert soak.db_server_port('mysql+pymysql://root@127.0.0.1') == 3306
    assert soak.db_server_port('mysql+pymysql://root@db:3307') == 3307
    assert soak.db_server_port('postgresql+psycopg2://u@h') == 5432
    assert soak.db_server_port(None) is None
