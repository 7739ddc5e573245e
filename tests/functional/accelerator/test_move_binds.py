"""Binding ARQs to an instance that has some already: refused on the same
host (Cyborg's rule), taken on another host (a move's destination, while
the source keeps its ARQs until the move is confirmed)."""

from nimbus.accelerator import states
from nimbus.accelerator.objects import device as device_obj
from tests.functional.accelerator.conftest import device
from tests.functional.accelerator.conftest import error_text
from tests.functional.accelerator.conftest import HOST
from tests.functional.accelerator.conftest import INSTANCE
from tests.functional.accelerator.conftest import SERVICE

ARQS = '/v2/accelerator_requests'
OTHER_HOST = 'compute2'


def _bind(api, arq, host, rp_index):
    ops = [
        {'path': '/hostname', 'op': 'add', 'value': host},
        {
            'path': '/device_rp_uuid',
            'op': 'add',
            'value': '33333333-0000-4000-8000-%012d' % rp_index,
        },
        {'path': '/instance_uuid', 'op': 'add', 'value': INSTANCE},
    ]
    return api.patch(ARQS, {arq['uuid']: ops}, headers=SERVICE)


def test_a_second_bind_on_the_same_host_is_400_on_another_host_202(api):
    device_obj.report(api.adb, OTHER_HOST, [device(OTHER_HOST, 2)])
    api.profile()
    [source] = api.arqs()
    assert _bind(api, source, HOST, 0).status_code == 202
    api.bind_pass()
    [same_host] = api.arqs()
    response = _bind(api, same_host, HOST, 0)
    assert response.status_code == 400
    assert 'on that host' in error_text(response)
    assert api.get(ARQS + '/' + same_host['uuid']).json['state'] == (
        states.INITIAL
    )
    [destination] = api.arqs()
    assert _bind(api, destination, OTHER_HOST, 2).status_code == 202
    api.bind_pass()
    shown = {
        a['uuid']: (a['state'], a['hostname'])
        for a in api.get(ARQS, params={'instance': INSTANCE}).json['arqs']
    }
    assert shown == {
        source['uuid']: (states.BOUND, HOST),
        destination['uuid']: (states.BOUND, OTHER_HOST),
    }
