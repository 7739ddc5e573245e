"""``python -m harness.soak_run`` ended by SIGTERM (``timeout``,
``pkill``, a CI job cancelled) stops the daemons it started and drops the
vhosts and databases it made; before, the daemons outlived it and the
databases piled up in MariaDB."""

import configparser
import glob
import os
import signal
import pathlib
import subprocess
import sys
import time

import psutil
import pytest
import sqlalchemy as sa

from nimbus.testing import infra

pytestmark = [pytest.mark.integration, pytest.mark.soak]

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _daemons_of(workdir):
    found = []
    for process in psutil.process_iter(['cmdline']):
        cmdline = process.info['cmdline'] or []
        if any(workdir in part for part in cmdline) and any(
            part.startswith('nimbus.cmd.') for part in cmdline
        ):
            found.append(process)
    return found


def _database_names(workdir):
    names = set()
    for path in glob.glob(os.path.join(workdir, '*.conf')):
        conf = configparser.ConfigParser(interpolation=None, strict=False)
        conf.read(path)
        names.update(
            conf[section]['connection'].rpartition('/')[2].partition('?')[0]
            for section in conf.sections()
            if section.endswith('database') and 'connection' in conf[section]
        )
    return names


def test_sigterm_stops_the_daemons_and_drops_the_databases(tmp_path):
    for what, (host, port) in (
        ('RabbitMQ', infra.rabbit_address()),
        ('MariaDB', ('127.0.0.1', 3306)),  # as soak_run checks
    ):
        if not infra.port_open(host, port):
            infra.unavailable(
                '%s is not listening on %s:%d' % (what, host, port)
            )
    workdir = str(tmp_path / 'cloud')
    out = open(tmp_path / 'soak.out', 'w')
    run = subprocess.Popen(
        [
            sys.executable,
            '-m',
            'harness.soak_run',
            '--duration',
            '600',
            '--interval',
            '5',
            '--workdir',
            workdir,
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
        cwd=ROOT,  # harness/ is not installed: run from the checkout
    )
    try:
        deadline = time.monotonic() + 240
        while ' 0 s:' not in (tmp_path / 'soak.out').read_text():
            assert run.poll() is None, (tmp_path / 'soak.out').read_text()
            assert time.monotonic() < deadline, 'the load never started'
            time.sleep(1)
        daemons = _daemons_of(workdir)
        names = _database_names(workdir)
        assert len(daemons) >= 6 and len(names) >= 3  # cell0 is in no file
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=180) == 143
        _gone, alive = psutil.wait_procs(daemons, timeout=30)
        assert not alive, 'still running: %s' % [p.pid for p in alive]
    finally:
        if run.poll() is None:
            run.send_signal(signal.SIGTERM)
            try:
                run.wait(timeout=180)
            except subprocess.TimeoutExpired:
                run.kill()
                run.wait()
        # A failed test leaves nothing running either.
        leftover = _daemons_of(workdir)
        for process in leftover:
            process.kill()
        psutil.wait_procs(leftover, timeout=30)
    engine = sa.create_engine(infra.server_url('mysql'))
    try:
        with engine.connect() as conn:
            present = {
                row[0] for row in conn.execute(sa.text('SHOW DATABASES'))
            }
    finally:
        engine.dispose()
    assert not names & present, 'left behind: %s' % sorted(names & present)
