"""oslo.policy defaults and a policy file override."""

from nimbus.common import db as common_db
from tests.functional.api import fixtures


def test_defaults_member_vs_admin(api):
    api.add_compute('host1')
    for path in (
        '/v2.1/os-services',
        '/v2.1/os-hypervisors',
        '/v2.1/os-aggregates',
        '/v2.1/os-availability-zone/detail',
        '/v2.1/os-scheduler/records?request_id=r',
    ):
        assert api.req('GET', path).status_code == 403, path
        assert api.admin('GET', path).status_code == 200, path
    # the admin role (not only the user name) makes an admin
    r = api.req('GET', '/v2.1/os-services', user='ops', roles='admin')
    assert r.status_code == 200
    # members list flavors and zones
    assert api.req('GET', '/v2.1/flavors').status_code == 200
    assert api.req('GET', '/v2.1/os-availability-zone').status_code == 200


def test_policy_file_override(tmp_path):
    policy = tmp_path / 'policy.yaml'
    policy.write_text(
        '"os_compute_api:os-hypervisors:list": "@"\n'
        '"os_compute_api:servers:create": "!"\n'
    )
    api = fixtures.ApiFixture(
        tmp_path, overrides={'oslo_policy': {'policy_file': str(policy)}}
    )
    try:
        assert api.req('GET', '/v2.1/os-hypervisors').status_code == 200
        api.add_flavor()
        r = api.req(
            'POST',
            '/v2.1/servers',
            {
                'server': {
                    'name': 'vm',
                    'flavorRef': '1',
                    'imageRef': api.add_image(),
                }
            },
        )
        assert r.status_code == 403
        assert (
            'os_compute_api:servers:create' in r.json['forbidden']['message']
        )
    finally:
        common_db.dispose_all()
