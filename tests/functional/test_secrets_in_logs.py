"""No password in a log line, a printed line or an error message.

The cloud runs with passwords in every URL it is given: the transport URLs
of the API bus and cell1, and the API and cell databases on PostgreSQL
(trust authentication ignores the password, so the cloud works). Logging
is set up as every Nimbus process sets it up (oslo.log, then
:func:`nimbus.common.secrets.setup_logging`), at DEBUG, into a file; the
operator's commands run as subprocesses. Neither the log nor their output
holds a password.
"""

import configparser
import logging
import os
import subprocess
import sys

import pytest

from nimbus.allinone import client as client_mod
from nimbus.allinone.cloud import wait_for
from nimbus.common import config
from nimbus.common import db as common_db
from nimbus.common import secrets
from nimbus.messaging_internals import inproc
from nimbus.allinone import cloud as cloud_mod
from nimbus.testing import infra

MANAGE = os.path.join(os.path.dirname(sys.executable), 'nimbus-manage')
SECRETS = (
    'BusSecretApi',
    'BusSecretCell',
    'DbSecretApi',
    'DbSecretCell',
    'DbSecretBad',
    'BusSecretBad',
)


def _with_password(url, password):
    scheme, rest = url.split('://', 1)
    user, host = rest.split('@', 1)
    return '%s://%s:%s@%s' % (scheme, user, password, host)


@pytest.fixture
def oslo_log_file(tmp_path):
    """oslo.log as a daemon sets it up, at DEBUG, into a file; the root
    logger's handlers and level are restored afterwards."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    path = str(tmp_path / 'nimbus.log')
    conf = config.build_conf(
        [],
        overrides={
            'DEFAULT': {'log_file': path, 'debug': True, 'use_stderr': False}
        },
    )
    secrets.setup_logging(conf)
    # A daemon starts with fresh loggers. In this worker an earlier test may
    # have run the `nimbus` CLI in process (its oslo.log setup quiets the
    # `nimbus` logger to WARNING) or a library's logging.config.fileConfig
    # (which disables every logger that existed then).
    for name, logger in logging.Logger.manager.loggerDict.items():
        if isinstance(logger, logging.Logger):
            logger.disabled = False
            if name == 'nimbus' or name.startswith('nimbus.'):
                logger.setLevel(logging.NOTSET)
    yield path
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    for handler in saved[0]:
        root.addHandler(handler)
    root.setLevel(saved[1])
    sys.excepthook = sys.__excepthook__


@pytest.fixture
def pg_databases():
    urls, cleanups = {}, []
    for name, password in (
        ('api', 'DbSecretApi'),
        ('cell1', 'DbSecretCell'),
        ('placement', None),
    ):
        url, cleanup = infra.database('postgresql')
        cleanups.append(cleanup)
        urls[name] = _with_password(url, password) if password else url
    yield urls
    common_db.dispose_all()
    for cleanup in cleanups:
        cleanup()


def _manage_config(tmp_path, cloud):
    parser = configparser.ConfigParser(interpolation=None)
    parser['DEFAULT'] = {'state_path': str(tmp_path), 'debug': 'true'}
    parser['api_database'] = {'connection': cloud.db_urls['api']}
    parser['placement_client'] = {'endpoint': cloud.placement_url}
    path = str(tmp_path / 'manage.conf')
    with open(path, 'w') as f:
        parser.write(f)
    return path


def _manage(config, log_file, *args):
    return subprocess.run(
        [MANAGE, '--config-file', config, '--log-file', log_file] + list(args),
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_no_password_reaches_a_log_line_or_the_operator(
    tmp_path, oslo_log_file, pg_databases
):
    tag = tmp_path.name
    cloud = cloud_mod.Cloud(
        str(tmp_path / 'cloud'),
        hosts=2,
        transport_url='inproc://nimbus:BusSecretApi@/%s-api' % tag,
        cell_transport_url='inproc://nimbus:BusSecretCell@/%s-cell1' % tag,
        database_urls=pg_databases,
        overrides={'DEFAULT': {'report_interval': 1}},
    )
    outputs = []
    try:
        cloud.start()
        api = client_mod.ComputeClient(cloud.api_url)
        flavor = api.create_flavor('m1.tiny', 1, 512, 1)
        image = api.create_image('cirros')
        server = api.create_server('vm', flavor['id'], image['id'])['server'][
            'id'
        ]
        wait_for(
            lambda: api.server(server)['status'] == 'ACTIVE' or None,
            timeout=60,
            what='the server',
        )

        config = _manage_config(tmp_path, cloud)
        manage_log = str(tmp_path / 'manage.log')
        listed = _manage(config, manage_log, 'cell', 'list')
        assert listed.returncode == 0, listed.stderr
        assert 'nimbus:***@/%s-cell1' % tag in listed.stdout
        assert 'postgresql+psycopg://postgres:***@' in listed.stdout
        # A cell whose database cannot be reached: the error names the
        # URL, not its password.
        failed = _manage(
            config,
            manage_log,
            'cell',
            'create',
            '--name',
            'cell9',
            '--transport-url',
            'rabbit://nimbus:BusSecretBad@127.0.0.1:1/c9',
            '--database-connection',
            'mysql+pymysql://root:DbSecretBad@127.0.0.1:1/nowhere',
        )
        assert failed.returncode != 0
        assert (
            'cannot prepare the database mysql+pymysql://root:***@'
            '127.0.0.1:1/nowhere of cell cell9' in failed.stderr
        )
        assert (
            'cell9' not in _manage(config, manage_log, 'cell', 'list').stdout
        )
        assert 'Traceback' not in failed.stderr
        outputs = [
            listed.stdout,
            listed.stderr,
            failed.stdout,
            failed.stderr,
            open(manage_log).read(),
        ]
    finally:
        cloud.stop()
        inproc.reset_buses()
    for handler in logging.getLogger().handlers:
        handler.flush()
    log = open(oslo_log_file).read()
    # The services did log their URLs, masked.
    assert 'on inproc://nimbus:***@/%s-api' % tag in log
    assert 'on inproc://nimbus:***@/%s-cell1' % tag in log
    # The manage log names the database of the failed create, masked by
    # the log formatter, with the error's traceback.
    assert (
        'the database mysql+pymysql://root:***@127.0.0.1:1/nowhere of '
        'cell cell9 failed' in outputs[-1]
    )
    assert 'OperationalError' in outputs[-1]
    for text in [log] + outputs:
        for secret in SECRETS:
            assert secret not in text
