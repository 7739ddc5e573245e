"""``[wsgi] listen_backlog`` and how the embedded server applies it."""

import logging
import socket

import pytest
from oslo_config import cfg

from nimbus.common.wsgi import options
from nimbus.common.wsgi import server


def test_the_option_defaults_to_1024():
    conf = cfg.ConfigOpts()
    options.register_opts(conf)
    conf([])
    assert conf.wsgi.listen_backlog == 1024 == options.DEFAULT_LISTEN_BACKLOG


def test_the_option_refuses_zero(tmp_path):
    path = tmp_path / 'nimbus.conf'
    path.write_text('[wsgi]\nlisten_backlog = 0\n')
    conf = cfg.ConfigOpts()
    options.register_opts(conf)
    conf(['--config-file', str(path)])
    with pytest.raises(cfg.ConfigFileValueError):
        _ = conf.wsgi.listen_backlog


def test_none_is_the_default_below_the_system_maximum():
    assert server.listen_backlog(None, system_max=4096) == 1024


def test_a_configured_backlog_is_kept_below_the_system_maximum():
    assert server.listen_backlog(77, system_max=4096) == 77
    assert server.listen_backlog(4096, system_max=4096) == 4096


def test_the_system_maximum_caps_it_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger=server.__name__):
        assert server.listen_backlog(None, 'nimbus-api', system_max=128) == 128
    assert 'nimbus-api: [wsgi] listen_backlog 1024' in caplog.text
    assert 'net.core.somaxconn) 128' in caplog.text


def test_a_backlog_below_one_is_refused():
    with pytest.raises(ValueError, match='at least 1'):
        server.listen_backlog(0, system_max=4096)


def test_the_system_maximum_is_read_from_proc(tmp_path):
    path = tmp_path / 'somaxconn'
    path.write_text('4096\n')
    assert server.system_max_backlog(str(path)) == 4096


@pytest.mark.parametrize('text', [None, '', 'many\n'])
def test_without_a_readable_proc_it_is_socket_somaxconn(tmp_path, text):
    path = tmp_path / 'somaxconn'
    if text is not None:
        path.write_text(text)
    assert server.system_max_backlog(str(path)) == socket.SOMAXCONN


def test_the_server_passes_it_to_cheroot():
    app = server.EmbeddedServer(
        lambda environ, start_response: [], '127.0.0.1', 0, backlog=33
    )
    try:
        assert app.backlog == 33
        assert app._server.request_queue_size == 33
    finally:
        app._server.stop()
