"""GET /os-hypervisors/{id}/uptime end to end: nimbus-api calls the host's
compute (compute rpcapi 1.1 ``get_host_uptime``) on the cell's bus, and
the fake virt driver answers with an ``uptime`` line. All in one process
(every service real, SQLite, the in-process bus)."""

import re
import time
import uuid

import pytest

from nimbus.allinone import client as client_mod
from nimbus.allinone import cloud as cloud_mod
from nimbus.messaging_internals import inproc
from nimbus.compute.virt import fake

LINE = re.compile(
    r'^ \d\d:\d\d:\d\d up (\d+) days, (\d+):(\d\d),  0 users,  '
    r'load average: \d+\.\d\d, \d+\.\d\d, \d+\.\d\d$'
)


@pytest.fixture(scope='module')
def cloud(tmp_path_factory):
    tag = uuid.uuid4().hex[:8]
    cloud = cloud_mod.Cloud(
        str(tmp_path_factory.mktemp('uptime')),
        hosts=1,
        transport_url='inproc:///uptime-%s-api' % tag,
        cell_transport_url='inproc:///uptime-%s-cell1' % tag,
        overrides={'DEFAULT': {'report_interval': 1}},
    )
    cloud.start()
    yield cloud
    cloud.stop()
    inproc.reset_buses()


def test_uptime_comes_from_the_compute(cloud):
    api = client_mod.ComputeClient(cloud.api_url, microversion='2.1')
    hypervisors = cloud_mod.wait_for(
        lambda: api.get('/os-hypervisors')['hypervisors'] or None,
        timeout=60,
        what='a hypervisor',
    )
    (hypervisor,) = hypervisors
    body = cloud_mod.wait_for(
        lambda: _uptime(api, hypervisor['id']), timeout=60, what='an uptime'
    )
    assert body['id'] == hypervisor['id']
    assert body['hypervisor_hostname'] == hypervisor['hypervisor_hostname']
    assert body['state'] == 'up' and body['status'] == 'enabled'
    assert LINE.match(body['uptime']), body['uptime']


def test_a_driver_that_cannot_tell_is_501(cloud, monkeypatch):
    # NotImplementedError crosses the bus as itself (oslo.messaging
    # rebuilds builtin exceptions), and the API answers 501 with a body.
    def cannot(self):
        raise NotImplementedError()

    monkeypatch.setattr(fake.FakeDriver, 'get_host_uptime', cannot)
    api = client_mod.ComputeClient(cloud.api_url, microversion='2.1')
    (hypervisor,) = cloud_mod.wait_for(
        lambda: api.get('/os-hypervisors')['hypervisors'] or None,
        timeout=60,
        what='a hypervisor',
    )
    url = api.url + '/os-hypervisors/%s/uptime' % hypervisor['id']
    # (a requests Response of a 4xx/5xx is falsy, hence the list)
    (response,) = cloud_mod.wait_for(
        lambda: (lambda r: [r] if r.status_code != 400 else None)(
            api.session.get(url, timeout=30)
        ),
        timeout=60,
        what='an answer from an up compute',
    )
    assert response.status_code == 501, response.text
    message = response.json()['notImplemented']['message']
    assert hypervisor['hypervisor_hostname'] in message


def _uptime(api, hypervisor_id):
    response = api.session.get(
        api.url + '/os-hypervisors/%s/uptime' % hypervisor_id, timeout=30
    )
    # 400 until the compute's service reports up
    if response.status_code == 400:
        return None
    assert response.status_code == 200, response.text
    return response.json()['hypervisor']


@pytest.mark.parametrize(
    'seconds, days, hours, minutes',
    [
        (0, 0, 0, 0),
        (59, 0, 0, 0),
        (3600 + 120, 0, 1, 2),
        (86400 * 3 + 3600 * 23 + 60 * 59 + 59, 3, 23, 59),
        # a clock that went back shows no negative time
        (-30, 0, 0, 0),
    ],
)
def test_uptime_line(seconds, days, hours, minutes):
    now = time.time()
    line = fake.uptime_line(now, now - seconds, (0.5, 0.25, 1.0))
    match = LINE.match(line)
    assert match, line
    assert tuple(int(g) for g in match.groups()) == (days, hours, minutes)
    assert line.endswith('load average: 0.50, 0.25, 1.00')
    assert line[1:9] == time.strftime('%H:%M:%S', time.gmtime(now))
