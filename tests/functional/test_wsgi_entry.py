"""The WSGI entry points (``nimbus.wsgi.*:application``) find their config
as documented and build the apps the console scripts build; under a real
server with two workers in tests/integration/test_gunicorn.py."""

import falcon.testing
import pytest

from nimbus import wsgi
from nimbus.wsgi import accelerator as accel_entry
from nimbus.wsgi import api as api_entry
from nimbus.wsgi import placement as placement_entry


def _write(path, text=''):
    path.write_text(text)
    return str(path)


def test_nimbus_config_file_wins_and_may_name_several(tmp_path):
    one = _write(tmp_path / 'one.conf')
    two = _write(tmp_path / 'two.conf')
    (tmp_path / 'placement.conf').write_text('')
    env = {wsgi.ENV_FILE: one + ':' + two, wsgi.ENV_DIR: str(tmp_path)}
    assert wsgi.config_files('placement.conf', env) == [one, two]


def test_a_named_file_that_is_missing_is_an_error(tmp_path):
    missing = str(tmp_path / 'nope.conf')
    with pytest.raises(wsgi.ConfigNotFound, match='nope.conf: no such file'):
        wsgi.config_files('placement.conf', {wsgi.ENV_FILE: missing})


def test_the_directory_gives_the_service_file_else_nimbus_conf(tmp_path):
    env = {wsgi.ENV_DIR: str(tmp_path)}
    common = _write(tmp_path / 'nimbus.conf')
    assert wsgi.config_files('placement.conf', env) == [common]
    own = _write(tmp_path / 'placement.conf')
    assert wsgi.config_files('placement.conf', env) == [own]
    assert wsgi.config_files('nimbus.conf', env) == [common]


def test_no_file_names_every_path_tried(tmp_path):
    env = {wsgi.ENV_DIR: str(tmp_path)}
    with pytest.raises(wsgi.ConfigNotFound) as caught:
        wsgi.config_files('accelerator.conf', env)
    message = str(caught.value)
    assert str(tmp_path / 'accelerator.conf') in message
    assert str(tmp_path / 'nimbus.conf') in message
    assert wsgi.ENV_FILE in message and wsgi.ENV_DIR in message


def test_the_default_directory_is_etc_nimbus():
    with pytest.raises(wsgi.ConfigNotFound, match='/etc/nimbus/nimbus.conf'):
        wsgi.config_files('nimbus.conf', {})


def test_placement_application_serves_from_the_config_dir(
    tmp_path, monkeypatch
):
    _write(
        tmp_path / 'placement.conf',
        '[api]\nauth_strategy = noauth2\n'
        '[placement_database]\nconnection = sqlite:///%s\n'
        % (tmp_path / 'placement.sqlite'),
    )
    monkeypatch.delenv(wsgi.ENV_FILE, raising=False)
    monkeypatch.setenv(wsgi.ENV_DIR, str(tmp_path))
    entry = wsgi.Application(
        'nimbus-placement-api',
        'placement.conf',
        placement_entry.application.factory,
    )
    client = falcon.testing.TestClient(entry)
    assert client.simulate_get('/').json['versions'][0]['max_version'] == (
        '1.39'
    )
    traits = client.simulate_get(
        '/traits',
        headers={
            'X-Auth-Token': 'admin',
            'OpenStack-API-Version': 'placement latest',
        },
    ).json['traits']
    assert 'HW_CPU_X86_AVX2' in traits
    # Built once: the same app object serves every request.
    assert entry.load() is entry.load()


@pytest.mark.parametrize(
    'entry,service_file',
    [
        (api_entry.application, 'nimbus.conf'),
        (accel_entry.application, 'accelerator.conf'),
    ],
    ids=['api', 'accelerator'],
)
def test_the_api_and_accelerator_refuse_the_in_process_bus(
    tmp_path, monkeypatch, entry, service_file
):
    # Their console scripts refuse it too: no other process could reach
    # a worker on it.
    config = _write(
        tmp_path / service_file, '[api]\nauth_strategy = noauth2\n'
    )
    monkeypatch.setenv(wsgi.ENV_FILE, config)
    fresh = wsgi.Application(
        entry.prog, entry.service_file, entry.factory, entry.needs_bus
    )
    with pytest.raises(RuntimeError, match='no transport_url is set'):
        fresh.load()
