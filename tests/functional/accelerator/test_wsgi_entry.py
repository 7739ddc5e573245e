"""``nimbus.accelerator.api.wsgi:application`` (for gunicorn) builds the
app from NIMBUS_CONFIG_FILE on its first request."""

import falcon.testing

from nimbus.accelerator.api import wsgi


def test_application_reads_the_config_file(tmp_path, monkeypatch):
    conf_file = tmp_path / 'nimbus.conf'
    conf_file.write_text(
        '[api]\nauth_strategy = noauth2\n'
        '[accelerator_database]\nconnection = sqlite:///%s\n'
        % (tmp_path / 'accel.sqlite')
    )
    monkeypatch.setenv('NIMBUS_CONFIG_FILE', str(conf_file))
    client = falcon.testing.TestClient(wsgi._LazyApplication())
    assert client.simulate_get('/').json['versions'][0]['max_version'] == '2.3'
    response = client.simulate_get(
        '/v2/device_profiles',
        headers={'X-Auth-Token': 'admin', 'X-Roles': 'admin'},
    )
    assert response.status_code == 200
    assert response.json == {'device_profiles': []}
    assert (tmp_path / 'accel.sqlite').exists()
