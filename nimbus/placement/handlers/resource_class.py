"""/resource_classes and /resource_classes/{name} (from 1.2)."""

from nimbus.placement.handlers import util
from nimbus.placement.objects import resource_class as rc_obj
from nimbus.placement.schemas import resource_class as schema


def _path(name):
    return '/resource_classes/%s' % name


def _represent(req, name):
    return {
        'name': name,
        'links': [{'rel': 'self', 'href': util.url(req, _path(name))}],
    }


@util.since((1, 2))
@util.json_only
def list_classes(state, req, resp):
    util.authorize(state, req, 'placement:resource_classes:list')
    rows = state.pdb.read(rc_obj.list_all)
    util.send(
        req,
        resp,
        {'resource_classes': [_represent(req, r['name']) for r in rows]},
    )


@util.since((1, 2))
@util.json_only
def show(state, req, resp, name):
    util.authorize(state, req, 'placement:resource_classes:show')
    row = state.pdb.read(rc_obj.get, name)
    util.send(
        req,
        resp,
        _represent(req, row['name']),
        last_modified=row['updated_at'] or row['created_at'],
    )


@util.since((1, 2))
def create(state, req, resp):
    util.authorize(state, req, 'placement:resource_classes:create')
    data = util.body(req, schema.POST)
    state.pdb.write(rc_obj.create, data['name'])
    util.created(req, resp, _path(data['name']))


@util.since((1, 2))
def update(state, req, resp, name):
    """Before 1.7 a rename (body ``{"name"}``); from 1.7 create-or-verify
    (201 or 204, both with ``location``)."""
    util.authorize(state, req, 'placement:resource_classes:update')
    if util.version(req) >= (1, 7):
        util.validate({'name': name}, schema.POST, 'Resource class name')
        if state.pdb.write(rc_obj.ensure, name):
            util.created(req, resp, _path(name))
        else:
            util.no_content(resp)
            util.location(req, resp, _path(name))
        return
    data = util.body(req, schema.PUT_1_2)
    state.pdb.write(rc_obj.rename, name, data['name'])
    util.send(req, resp, _represent(req, data['name']))


@util.since((1, 2))
def delete(state, req, resp, name):
    util.authorize(state, req, 'placement:resource_classes:delete')
    state.pdb.write(rc_obj.delete, name)
    util.no_content(resp)
