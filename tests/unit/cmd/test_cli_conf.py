"""nimbus.cmd.cli_conf: what the CLI reads from the daemons' config
files, and in which order it takes a flag, a file, the environment and the
default."""

from nimbus.cmd import cli_conf


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_without_files_nothing_comes_from_them():
    conf = cli_conf.load([], bus=True)
    assert cli_conf.api_url(conf) is None
    assert cli_conf.placement_url(conf) is None
    assert cli_conf.transport_url(conf) is None


def test_bus_defaults_are_the_daemons():
    """What the scheduler declares: a durable exchange named nimbus."""
    conf = cli_conf.load([], bus=True)
    assert conf.control_exchange == 'nimbus'
    assert conf.oslo_messaging_rabbit.amqp_durable_queues is True


def test_files_override_the_messaging_options(tmp_path):
    path = _write(
        tmp_path,
        'n.conf',
        '[DEFAULT]\ncontrol_exchange = other\n'
        'transport_url = rabbit://u:p@h:5672/v\n'
        '[oslo_messaging_rabbit]\namqp_durable_queues = false\n',
    )
    conf = cli_conf.load([path], bus=True)
    assert conf.control_exchange == 'other'
    assert conf.oslo_messaging_rabbit.amqp_durable_queues is False
    assert cli_conf.transport_url(conf) == 'rabbit://u:p@h:5672/v'


def test_rpc_transport_url_wins_and_later_files_win(tmp_path):
    first = _write(
        tmp_path,
        'a.conf',
        '[DEFAULT]\ntransport_url = rabbit://u:p@h/default\n'
        '[rpc]\ntransport_url = rabbit://u:p@h/first\n',
    )
    second = _write(
        tmp_path, 'b.conf', '[rpc]\ntransport_url = rabbit://u:p@h/second\n'
    )
    assert (
        cli_conf.transport_url(cli_conf.load([first], bus=True))
        == 'rabbit://u:p@h/first'
    )
    assert (
        cli_conf.transport_url(cli_conf.load([first, second], bus=True))
        == 'rabbit://u:p@h/second'
    )


def test_endpoints_from_client_groups_then_listen_addresses(tmp_path):
    listen = _write(
        tmp_path,
        'listen.conf',
        '[wsgi]\napi_listen = 0.0.0.0\napi_listen_port = 9774\n'
        'placement_listen = 10.0.0.5\n',
    )
    conf = cli_conf.load([listen])
    assert cli_conf.api_url(conf) == 'http://127.0.0.1:9774'
    assert cli_conf.placement_url(conf) == 'http://10.0.0.5:8778'
    clients = _write(
        tmp_path,
        'clients.conf',
        '[compute_client]\nendpoint = http://api-1:8774/v2.1\n'
        '[placement_client]\nendpoint = http://placement-1:8778\n',
    )
    conf = cli_conf.load([listen, clients])
    assert cli_conf.api_url(conf) == 'http://api-1:8774/v2.1'
    assert cli_conf.placement_url(conf) == 'http://placement-1:8778'


def test_ipv6_listen_address(tmp_path):
    path = _write(tmp_path, 'v6.conf', '[wsgi]\napi_listen = fd00::5\n')
    conf = cli_conf.load([path])
    assert cli_conf.api_url(conf) == 'http://[fd00::5]:8774'


def test_a_daemon_s_log_settings_do_not_apply(tmp_path):
    path = _write(
        tmp_path,
        'd.conf',
        '[DEFAULT]\nlog_file = /var/log/nimbus/api.log\ndebug = true\n'
        'use_stderr = false\n',
    )
    conf = cli_conf.load([path])
    assert conf.log_file is None
    assert conf.debug is False
    assert conf.use_stderr is True


def test_a_missing_or_broken_file_is_a_config_error(tmp_path):
    for path in (
        str(tmp_path / 'missing.conf'),
        _write(tmp_path, 'broken.conf', 'no section header\n'),
    ):
        try:
            cli_conf.load([path])
        except cli_conf.ConfigError as exc:
            assert path in str(exc) or 'broken' in str(exc)
        else:
            raise AssertionError('no ConfigError for %s' % path)


def test_order_flag_file_environment_default(monkeypatch):
    monkeypatch.setenv('NIMBUS_X', 'env')
    assert cli_conf.resolve('flag', 'file', 'NIMBUS_X', 'd') == 'flag'
    assert cli_conf.resolve(None, 'file', 'NIMBUS_X', 'd') == 'file'
    assert cli_conf.resolve(None, None, 'NIMBUS_X', 'd') == 'env'
    monkeypatch.delenv('NIMBUS_X')
    assert cli_conf.resolve(None, None, 'NIMBUS_X', 'd') == 'd'
