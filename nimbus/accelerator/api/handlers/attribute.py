"""/v2/attributes: key/value attributes of deployables; list (by
``deployable_id`` and ``key``), show, create (201), delete (204)."""

from nimbus.accelerator.api import policies
from nimbus.accelerator.api.handlers import util
from nimbus.accelerator.api.schemas import attribute as schema
from nimbus.accelerator.objects import attribute as attribute_obj

NOUN = 'attributes'


def render(req, attribute):
    return util.body_of(
        req, NOUN, attribute, ('uuid', 'deployable_id', 'key', 'value')
    )


def list_attributes(state, req, resp):
    util.authorize(state, req, policies.ATTRIBUTE % 'get_all')
    params = util.query(req, {'deployable_id', 'key'})
    deployable_id = params.get('deployable_id')
    if deployable_id is not None:
        try:
            deployable_id = int(deployable_id)
        except ValueError as exc:
            raise util.bad_request(
                'deployable_id must be an integer, not %r' % deployable_id
            ) from exc
    attributes = attribute_obj.list_attributes(
        state.adb, deployable_id=deployable_id, key=params.get('key')
    )
    util.send(resp, {NOUN: [render(req, a) for a in attributes]})


def _get(state, uuid):
    util.uuid_param('uuid', uuid)
    with util.lookup(attribute_obj.NotFound, 'Attribute', uuid):
        return attribute_obj.get(state.adb, uuid)


def show(state, req, resp, uuid):
    util.authorize(state, req, policies.ATTRIBUTE % 'get_one')
    util.send(resp, render(req, _get(state, uuid)))


def create(state, req, resp):
    util.authorize(state, req, policies.ATTRIBUTE % 'create')
    body = util.json_body(req, schema.CREATE)
    try:
        created = attribute_obj.create(
            state.adb, body['deployable_id'], body['key'], body['value']
        )
    except attribute_obj.UnknownDeployable as exc:
        raise util.bad_request(
            'Deployable %d does not exist' % body['deployable_id']
        ) from exc
    util.send(resp, render(req, created), 201)


def delete(state, req, resp, uuid):
    util.authorize(state, req, policies.ATTRIBUTE % 'delete')
    util.uuid_param('uuid', uuid)
    with util.lookup(attribute_obj.NotFound, 'Attribute', uuid):
        attribute_obj.delete(state.adb, uuid)
    util.send(resp, None, 204)
