"""The access line written by AccessLog is the line oslo.log writes.

Each case sets oslo.log up as a daemon does (``oslo_log.setup`` and
``secrets.install``) with some options, writes one access line through
:class:`AccessLog` and one through oslo.log's own path (``LOG.info``) at
the same clock, and compares the two lines, byte for byte, in every
destination the set-up names.
"""

import io
import logging
import sys
from unittest import mock

import pytest
from oslo_config import cfg
from oslo_context import context as oslo_context
from oslo_log import log as oslo_logging

from nimbus.common import context as nimbus_context
from nimbus.common import secrets
from nimbus.common.wsgi import access_log
from nimbus.common.wsgi import middleware

ARGS = (
    '127.0.0.1',
    'PUT',
    '/resource_providers/0b1c7a5e-3f7e-4b51-9b71-2f9d0e9e1a11/traits',
    '?a=1',
    '200',
    '1.39',
)
CLOCK = 1764457335.042917


@pytest.fixture
def logging_state():
    """Restores the root logger and oslo.context's current context; the
    access line's own loggers start clean (an earlier test's
    ``logging.config`` may have disabled them or raised their level) and
    get their state back after."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    stdout, stderr = sys.stdout, sys.stderr
    chain = []
    name = middleware.LOG.logger.name
    while name:
        chain.append(logging.getLogger(name))
        name = name.rpartition('.')[0]
    saved = [(lg, lg.level, lg.disabled, lg.propagate) for lg in chain]
    disabled_below = logging.root.manager.disable
    for lg in chain:
        lg.setLevel(logging.NOTSET)
        lg.disabled = False
        lg.propagate = True
    logging.disable(logging.NOTSET)
    yield
    for lg, lg_level, lg_disabled, lg_propagate in saved:
        lg.setLevel(lg_level)
        lg.disabled = lg_disabled
        lg.propagate = lg_propagate
    logging.disable(disabled_below)
    for handler in list(root.handlers):
        root.removeHandler(handler)
        if handler not in handlers:
            handler.close()
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)
    sys.stdout, sys.stderr = stdout, stderr
    if hasattr(oslo_context._request_store, 'context'):
        del oslo_context._request_store.context


def _setup(tmp_path, args=(), overrides=None):
    conf = cfg.ConfigOpts()
    oslo_logging.register_options(conf)
    conf(list(args), project='nimbus', default_config_files=[])
    for (group, name), value in (overrides or {}).items():
        conf.set_override(name, value, group)
    # Streams the test reads: oslo.log's stream handlers take the
    # current sys.stdout / sys.stderr when set up.
    sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
    oslo_logging.setup(conf, 'nimbus')
    secrets.install()
    return conf


def _outputs(tmp_path):
    texts = [sys.stdout.getvalue(), sys.stderr.getvalue()]
    log = tmp_path / 'nimbus.log'
    texts.append(log.read_text() if log.exists() else '')
    return texts


def _added(before, after):
    for a, b in zip(before, after, strict=True):
        assert b.startswith(a)
    return [b[len(a) :] for a, b in zip(before, after, strict=True)]


def _call(clock, write, *args):
    # one call site for both (a format string may name it)
    with mock.patch('time.time', return_value=clock):
        write(*args)


def _both_ways(tmp_path, clock=CLOCK, writer=None):
    """What oslo.log's line added to each destination, what AccessLog's
    added, and how many lines AccessLog wrote itself."""
    writer = writer or access_log.AccessLog(middleware.LOG)
    start = _outputs(tmp_path)
    _call(clock, middleware.LOG.info, access_log.AccessLog.MSG, *ARGS)
    middle = _outputs(tmp_path)
    _call(clock, writer.write, *ARGS)
    return (
        _added(start, middle),
        _added(middle, _outputs(tmp_path)),
        (writer.fast),
    )


def _context(**kwargs):
    values = dict(
        user_id='admin',
        project_id='p1',
        roles=['admin', 'member', 'reader'],
        request_id='req-0b1c7a5e-3f7e-4b51-9b71-2f9d0e9e1a11',
    )
    values.update(kwargs)
    return nimbus_context.RequestContext(overwrite=True, **values)


@pytest.mark.parametrize(
    'args, overrides, context, fast',
    [
        # a daemon's default: its log file
        (['--log-file', '{tmp}/nimbus.log'], {}, True, True),
        # no log file: oslo.log's stdout fallback
        ([], {}, True, True),
        # both a file and stderr
        (
            ['--log-file', '{tmp}/nimbus.log'],
            {(None, 'use_stderr'): True},
            True,
            True,
        ),
        # no request context: the default format string
        (['--log-file', '{tmp}/nimbus.log'], {}, False, True),
        # a global request id and a custom date format
        (
            ['--log-file', '{tmp}/nimbus.log'],
            {(None, 'log_date_format'): '%d/%m/%Y %H.%M.%S'},
            'global',
            True,
        ),
        # a format string naming thread fields, context values and the
        # error summary
        (
            [],
            {
                (None, 'logging_context_format_string'): (
                    '%(asctime)s %(thread)d %(threadName)s %(levelno)s '
                    '%(user)s %(project_id)s %(roles)s %(error_summary)s '
                    '%(project)s|%(version)s|%(resource)s %(message)s'
                ),
                (None, 'logging_user_identity_format'): '%(user)s@%(domain)s',
            },
            True,
            True,
        ),
        # a field not mirrored here (the call site): oslo.log's path
        (
            [],
            {
                (None, 'logging_context_format_string'): (
                    '%(lineno)d %(funcName)s %(message)s'
                )
            },
            True,
            False,
        ),
        # an ISO time: oslo.log's path
        (
            [],
            {
                (
                    None,
                    'logging_context_format_string',
                ): '%(isotime)s %(message)s'
            },
            True,
            False,
        ),
        # colour, rotation, JSON: oslo.log's path
        ([], {(None, 'log_color'): True}, True, False),
        (
            ['--log-file', '{tmp}/nimbus.log'],
            {(None, 'log_rotation_type'): 'size'},
            True,
            False,
        ),
        ([], {(None, 'use_json'): True}, True, False),
    ],
)
def test_same_line(tmp_path, logging_state, args, overrides, context, fast):
    args = [a.replace('{tmp}', str(tmp_path)) for a in args]
    _setup(tmp_path, args, overrides)
    if context == 'global':
        _context(global_request_id='req-11111111-2222-3333-4444-555555555555')
    elif context:
        _context()
    theirs, ours, written_here = _both_ways(tmp_path)
    assert ours == theirs
    assert any('status: 200 microversion: 1.39' in t for t in theirs)
    assert written_here == (1 if fast else 0)


def test_masked_like_oslo_log(tmp_path, logging_state):
    """A password in the path is masked the same way."""
    _setup(tmp_path, ['--log-file', str(tmp_path / 'nimbus.log')])
    _context()
    writer = access_log.AccessLog(middleware.LOG)
    args = ('127.0.0.1', 'GET', '/x', '?password=hunter2', '400', '1.0')
    with mock.patch('time.time', return_value=CLOCK):
        middleware.LOG.info(access_log.AccessLog.MSG, *args)
        writer.write(*args)
    first, second = (tmp_path / 'nimbus.log').read_text().splitlines()
    assert first == second
    assert 'hunter2' not in first
    assert writer.fast == 1


def test_level_and_filters_respected(tmp_path, logging_state):
    """A logger above INFO writes nothing; a filter takes oslo.log's path
    (which applies it)."""
    _setup(tmp_path, ['--log-file', str(tmp_path / 'nimbus.log')])
    _context()
    writer = access_log.AccessLog(middleware.LOG)
    logger = middleware.LOG.logger
    logger.setLevel(logging.WARNING)
    try:
        writer.write(*ARGS)
    finally:
        logger.setLevel(logging.NOTSET)
    assert not (tmp_path / 'nimbus.log').read_text()

    class Drop(logging.Filter):
        def filter(self, record):
            return False

    drop = Drop()
    logging.getLogger().handlers[0].addFilter(drop)
    writer.write(*ARGS)
    assert writer.fast == 0
    assert not (tmp_path / 'nimbus.log').read_text()
    logging.getLogger().handlers[0].removeFilter(drop)
    writer.write(*ARGS)
    assert writer.fast == 1
    assert 'status: 200' in (tmp_path / 'nimbus.log').read_text()


def test_seconds_cached_per_second(tmp_path, logging_state):
    """The cached date text follows the clock across a second."""
    _setup(tmp_path, ['--log-file', str(tmp_path / 'nimbus.log')])
    _context()
    writer = access_log.AccessLog(middleware.LOG)
    for clock in (CLOCK, CLOCK + 0.5, CLOCK + 1.0, CLOCK + 3600.25, CLOCK):
        theirs, ours, _ = _both_ways(tmp_path, clock, writer)
        assert ours == theirs
        assert theirs[2]
    assert writer.fast == 5
