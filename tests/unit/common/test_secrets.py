"""nimbus.common.secrets: passwords in URLs and log lines are masked."""

import io
import logging

import pytest
from oslo_config import cfg
from oslo_log import formatters
from oslo_log import log as oslo_logging

from nimbus.common import rpc
from nimbus.common import secrets


@pytest.mark.parametrize(
    'url, masked',
    [
        (
            'rabbit://nimbus:s3cr3t@10.0.0.1:5672/cell1',
            'rabbit://nimbus:***@10.0.0.1:5672/cell1',
        ),
        (
            'rabbit://a:pw1@h1:5672,b:pw2@h2:5672/v',
            'rabbit://a:***@h1:5672,b:***@h2:5672/v',
        ),
        (
            'mysql+pymysql://root:secret@127.0.0.1/nimbus?charset=utf8mb4',
            'mysql+pymysql://root:***@127.0.0.1/nimbus?charset=utf8mb4',
        ),
        (
            'postgresql+psycopg://nova:p:a,ss@db:5432/api',
            'postgresql+psycopg://nova:***@db:5432/api',
        ),
        ('rabbit://:onlypass@h/', 'rabbit://:***@h/'),
        # Nothing to hide.
        (
            'postgresql+psycopg://postgres@127.0.0.1:5432/x',
            'postgresql+psycopg://postgres@127.0.0.1:5432/x',
        ),
        (
            'sqlite:////var/lib/nimbus/api.sqlite',
            'sqlite:////var/lib/nimbus/api.sqlite',
        ),
        ('inproc:///cell1', 'inproc:///cell1'),
        ('none:///', 'none:///'),
    ],
)
def test_mask_url(url, masked):
    assert secrets.mask_url(url) == masked
    assert rpc.mask_url(url) == masked


def test_mask_finds_urls_and_password_forms_inside_text():
    text = (
        'Could not parse SQLAlchemy URL from string '
        "'mysql://root:hunter2@db/x'; retrying rabbit://u:hunter3@mq/ "
        'with password=hunter4 and "admin_password": "hunter5"'
    )
    masked = secrets.mask(text)
    for word in ('hunter2', 'hunter3', 'hunter4', 'hunter5'):
        assert word not in masked
    assert 'mysql://root:***@db/x' in masked
    assert 'rabbit://u:***@mq/' in masked
    assert secrets.mask('host-1 is up') == 'host-1 is up'
    assert secrets.mask(None) is None


def _oslo_logger(stream):
    """A logger whose handler has oslo.log's ContextFormatter, as
    oslo.log's setup leaves them."""
    conf = cfg.ConfigOpts()
    oslo_logging.register_options(conf)
    conf([])
    handler = logging.StreamHandler(stream)
    handler.setFormatter(
        formatters.ContextFormatter(project='nimbus', config=conf)
    )
    logger = logging.Logger('secrets-test', level=logging.DEBUG)
    logger.addHandler(handler)
    return logger, handler


def test_installed_formatter_masks_messages_arguments_and_tracebacks():
    stream = io.StringIO()
    logger, handler = _oslo_logger(stream)
    secrets.install(logger)
    secrets.install(logger)  # idempotent: wrapped once
    assert isinstance(handler.formatter, secrets.MaskingFormatter)
    assert not isinstance(handler.formatter.inner, secrets.MaskingFormatter)
    logger.info('connecting to %s', 'rabbit://nimbus:AmqpPw@mq:5672/')
    try:
        raise ValueError('cannot open mysql+pymysql://root:DbPw@db/nimbus')
    except ValueError:
        logger.exception(
            'database %s failed', 'mysql+pymysql://root:DbPw@db/nimbus'
        )
    out = stream.getvalue()
    assert 'AmqpPw' not in out and 'DbPw' not in out
    assert 'rabbit://nimbus:***@mq:5672/' in out
    assert (
        'Traceback' in out
        and 'ValueError: cannot open mysql+pymysql://root:***@db/nimbus' in out
    )


def test_exit_message_is_masked():
    exc = RuntimeError('no route to rabbit://u:ExitPw@h/')
    assert (
        secrets.exit_message('nimbus-manage cell', exc)
        == 'nimbus-manage cell: no route to rabbit://u:***@h/'
    )
