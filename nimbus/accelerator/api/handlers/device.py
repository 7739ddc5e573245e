"""/v2/devices: what the agents reported (read-only). ``status`` from
2.3."""

from nimbus.accelerator.api import policies
from nimbus.accelerator.api.handlers import util
from nimbus.accelerator.objects import device as device_obj

NOUN = 'devices'
FILTERS = ('type', 'vendor', 'hostname')


def render(req, device):
    body = {
        key: device[key]
        for key in (
            'uuid',
            'type',
            'vendor',
            'model',
            'std_board_info',
            'vendor_board_info',
            'hostname',
        )
    }
    if util.version(req) >= (2, 3):
        body['status'] = device['status']
    body['links'] = util.link(req, NOUN, device['uuid'])
    body.update(util.times(device))
    return body


def list_devices(state, req, resp):
    util.authorize(state, req, policies.DEVICE % 'get_all')
    params = util.query(req, set(FILTERS))
    util.send(
        resp,
        {
            NOUN: [
                render(req, d)
                for d in device_obj.list_devices(state.adb, params)
            ]
        },
    )


def show(state, req, resp, uuid):
    util.authorize(state, req, policies.DEVICE % 'get_one')
    util.uuid_param('uuid', uuid)
    try:
        device = device_obj.get_device(state.adb, uuid)
    except device_obj.NotFound as exc:
        raise util.not_found('Device %s could not be found' % uuid) from exc
    util.send(resp, render(req, device))
