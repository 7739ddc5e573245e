"""/v2/deployables: the programmable units of the reported devices
(read-only)."""

import orjson

from nimbus.accelerator.api import policies
from nimbus.accelerator.api.handlers import util
from nimbus.accelerator.objects import attribute as attribute_obj
from nimbus.accelerator.objects import device as device_obj

NOUN = 'deployables'


def render(req, deployable, attributes=()):
    """Cyborg's deployable: ``attributes_list`` is the JSON text of its
    attributes (``[{key: value}, ...]``); no bitstream is ever programmed
    here, so ``bitstream_id`` is null."""
    body = {
        'uuid': deployable['uuid'],
        'parent_id': None,
        'root_id': deployable['id'],
        'name': deployable['name'],
        'num_accelerators': deployable['num_accelerators'],
        'device_id': deployable['device_id'],
        'attributes_list': orjson.dumps(list(attributes)).decode(),
        'rp_uuid': deployable['rp_uuid'],
        'driver_name': deployable['driver_name'],
        'bitstream_id': None,
        'links': util.link(req, NOUN, deployable['uuid']),
    }
    body.update(util.times(deployable))
    return body


def list_deployables(state, req, resp):
    util.authorize(state, req, policies.DEPLOYABLE % 'get_all')
    params = util.query(req, {'rp_uuid', 'name'})
    deployables = device_obj.list_deployables(state.adb, params)
    attributes = attribute_obj.of_deployables(
        state.adb, [d['id'] for d in deployables]
    )
    util.send(
        resp,
        {
            NOUN: [
                render(req, d, attributes.get(d['id'], ()))
                for d in deployables
            ]
        },
    )


def show(state, req, resp, uuid):
    util.authorize(state, req, policies.DEPLOYABLE % 'get_one')
    util.uuid_param('uuid', uuid)
    with util.lookup(device_obj.NotFound, 'Deployable', uuid):
        deployable = device_obj.get_deployable(state.adb, uuid)
    attributes = attribute_obj.of_deployables(state.adb, [deployable['id']])
    util.send(
        resp, render(req, deployable, attributes.get(deployable['id'], ()))
    )
