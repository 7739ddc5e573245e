"""The soak's verdict logic: least-squares slopes and what counts as flat."""

import math

from hypothesis import given
from hypothesis import strategies as st
import pytest

from nimbus.testing import soak

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
