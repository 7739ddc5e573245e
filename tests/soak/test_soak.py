"""The short soak of ``make test``: three minutes of boots and deletes at
half the benchmarked rate on daemons over RabbitMQ and MariaDB, every
daemon sampled every 20 s; open fds, threads and database connections of
each must stay flat after the first minute (within three: a pool's
high-water mark, not a leak per request), and RSS is reported (an
expected failure when it grows; ``make soak`` runs the same for 30
minutes, sampling every minute, and fails on any series).
``NIMBUS_SOAK_DURATION``, ``NIMBUS_SOAK_INTERVAL`` and
``NIMBUS_SOAK_RATE`` change it."""

import os

import pytest

from nimbus.testing import infra
from harness import soak_run
from tests.soak import conftest

pytestmark = [pytest.mark.integration, pytest.mark.soak]


def _setting(name, default):
    return float(os.environ.get('NIMBUS_SOAK_' + name, default))


def test_short_soak(tmp_path):
    duration = _setting('DURATION', 180)
    interval = _setting('INTERVAL', 20)
    rate = _setting('RATE', soak_run.DEFAULT_RATE)
    with soak_run.cloud(str(tmp_path / 'cloud')) as (
        cloud,
        api,
        flavor,
        image,
        names,
    ):
        result = soak_run.run(
            cloud,
            api,
            flavor,
            image,
            duration,
            interval_s=interval,
            warmup_s=60,
            rate=rate,
            db_server=infra.server_url('mysql'),
            db_names=names,
            # Three minutes cannot tell a database pool reaching its
            # high-water mark (a recovery pass or a reload overlapping the
            # builds keeps one or two more connections, and their fds,
            # for good) from a slow leak: that is the 30-minute soak's
            # verdict, at a slack of one. What three minutes catch is a
            # leak per request: at 4 boots/s, hundreds of fds, threads or
            # connections, far past this slack.
            counted_slack=3,
        )
        logs = cloud.logs()[-4000:]
    report = result.report()
    conftest.REPORTS.append(report)
    # the load ran: most offered boots were accepted, none refused
    assert result.booted >= 0.8 * rate * duration, report
    assert result.failures == 0, report
    # six daemons, each with every series
    assert {s.daemon for s in result.samples} == {
        'api',
        'placement-api',
        'scheduler',
        'conductor',
        'cell1-conductor',
        'c1',
    }
    # the API level holds database connections, the compute none
    last = {s.daemon: s for s in result.samples if s.db is not None}
    assert last['api'].db > 0 and last['placement-api'].db > 0, report
    assert last['c1'].db == 0, report
    # descriptors, threads and connections: flat in every daemon
    counted = [v for v in result.verdicts if v.series != 'rss']
    assert all(v.flat for v in counted), report + '\n' + logs
    # Memory: three minutes do not get a Python heap past its warm-up (the
    # 30-minute make soak judges it), and nimbus-api's grows with every
    # boot (README, "Soak"); a growing RSS is reported, not failed on.
    growing = [v.daemon for v in result.verdicts if not v.flat]
    if growing:
        pytest.xfail('RSS not flat in 3 minutes: %s' % ', '.join(growing))
