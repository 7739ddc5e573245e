"""/v2/deployables: the programmable units of the reported devices
(read-only)."""

from nimbus.accelerator.api import policies
from nimbus.accelerator.api.handlers import util
from nimbus.accelerator.objects import device as device_obj

NOUN = 'deployables'


def render(req, deployable):
    body = {
        'uuid': deployable['uuid'],
        'name': deployable['name'],
        'num_accelerators': deployable['num_accelerators'],
        'device_id': deployable['device_id'],
        'device_uuid': deployable['device_uuid'],
        'rp_uuid': deployable['rp_uuid'],
        'driver_name': deployable['driver_name'],
        'hostname': deployable['hostname'],
        'parent_id': None,
        'root_id': deployable['id'],
        'links': util.link(req, NOUN, deployable['uuid']),
    }
    body.update(util.times(deployable))
    return body


def list_deployables(state, req, resp):
    util.authorize(state, req, policies.DEPLOYABLE % 'get_all')
    params = util.query(req, {'rp_uuid', 'name'})
    util.send(
        resp,
        {
            NOUN: [
                render(req, d)
                for d in device_obj.list_deployables(state.adb, params)
            ]
        },
    )


def show(state, req, resp, uuid):
    util.authorize(state, req, policies.DEPLOYABLE % 'get_one')
    try:
        deployable = device_obj.get_deployable(state.adb, uuid)
    except device_obj.NotFound:
        raise util.not_found('Deployable %s could not be found' % uuid)
    util.send(resp, render(req, deployable))
