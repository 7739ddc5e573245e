"""/v2/devices: what the agents reported (read-only). ``status`` from
2.3."""

from nimbus.accelerator.api import policies
from nimbus.accelerator.api.handlers import util
from nimbus.accelerator.objects import device as device_obj

NOUN = 'devices'
FILTERS = ('type', 'vendor', 'hostname')
KEYS = (
    'uuid',
    'type',
    'vendor',
    'model',
    'std_board_info',
    'vendor_board_info',
    'hostname',
)


def render(req, device):
    extra = {}
    if util.version(req) >= (2, 3):
        extra['status'] = device['status']
    return util.body_of(req, NOUN, device, KEYS, **extra)


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
    with util.lookup(device_obj.NotFound, 'Device', uuid):
        device = device_obj.get_device(state.adb, uuid)
    util.send(resp, render(req, device))
