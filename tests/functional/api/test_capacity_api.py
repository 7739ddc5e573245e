"""GET /os-scheduler/capacity: admin only, one answer per flavor, the
RequestSpec the scheduler is asked about."""

import pytest

from nimbus.common import db as common_db
from tests.functional.api import fixtures


@pytest.fixture
def api(tmp_path):
    fixture = fixtures.ApiFixture(tmp_path)
    calls = []

    def capacity(ctx, request_spec, per_host=True):
        request_spec = request_spec.to_primitive()  # as on the wire
        calls.append((request_spec, per_host))
        return {
            'total': request_spec['flavor']['vcpus'] * 10,
            'hosts': [] if per_host else None,
        }

    fixture.scheduler.capacity = capacity
    fixture.capacity_calls = calls
    yield fixture
    common_db.dispose_all()


def test_capacity(api):
    api.add_flavor('1', name='m1.small', vcpus=1)
    api.add_flavor('2', name='m1.large', vcpus=4)
    url = '/v2.1/os-scheduler/capacity?flavor=m1.small&flavor=2'
    assert api.req('GET', url).status_code == 403
    r = api.admin('GET', url)
    assert r.status_code == 200, r.text
    answers = r.json['capacity']
    assert [a['flavor']['name'] for a in answers] == ['m1.small', 'm1.large']
    assert [a['total'] for a in answers] == [10, 40]
    (spec, per_host), _ = api.capacity_calls
    assert per_host is True and spec['instance_uuids'] == []
    r = api.admin('GET', '/v2.1/os-scheduler/capacity?flavor=1&hosts=false')
    assert r.status_code == 200
    assert api.capacity_calls[-1][1] is False


def test_capacity_needs_a_flavor(api):
    assert api.admin('GET', '/v2.1/os-scheduler/capacity').status_code == 400
    r = api.admin('GET', '/v2.1/os-scheduler/capacity?flavor=nope')
    assert r.status_code in (400, 404)
