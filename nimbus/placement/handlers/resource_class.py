"""/resource_classes and /resource_classes/{name} (from 1.2)."""

from nimbus.placement import exception
from nimbus.placement.handlers import util
from nimbus.placement.objects import resource_class as rc_obj
from nimbus.placement.schemas import resource_class as schema


def _represent(name):
    return {'name': name, 'links': [
        {'rel': 'self', 'href': '/resource_classes/%s' % name}]}


def list_classes(state, req, resp):
    util.authorize(state, req, 'placement:resource_classes:list')
    rows = state.pdb.read(rc_obj.list_all)
    util.send(req, resp, {'resource_classes': [
        _represent(r['name']) for r in rows]})


def show(state, req, resp, name):
    util.authorize(state, req, 'placement:resource_classes:show')
    row = state.pdb.read(rc_obj.get, name)
    util.send(req, resp, _represent(row['name']),
              last_modified=row['updated_at'] or row['created_at'])


@util.since((1, 2))
def create(state, req, resp):
    util.authorize(state, req, 'placement:resource_classes:create')
    data = util.body(req, schema.POST)
    state.pdb.write(rc_obj.create, data['name'])
    resp.set_header('location', '/resource_classes/%s' % data['name'])
    util.send(req, resp, None, status=201)


@util.since((1, 2))
def update(state, req, resp, name):
    """Before 1.7 a rename (body ``{"name"}``); from 1.7 create-or-verify."""
    util.authorize(state, req, 'placement:resource_classes:update')
    if util.version(req) >= (1, 7):
        if not name.startswith('CUSTOM_') or \
                not name[7:].replace('_', '').isalnum() or \
                name != name.upper():
            raise exception.BadRequest(
                'Resource class name must start with CUSTOM_ and contain '
                'only upper case letters, digits and underscores: %s' % name)
        created = state.pdb.write(rc_obj.ensure, name)
        if created:
            resp.set_header('location', '/resource_classes/%s' % name)
            util.send(req, resp, None, status=201)
        else:
            util.no_content(resp)
        return
    data = util.body(req, schema.PUT_1_2)
    state.pdb.write(rc_obj.rename, name, data['name'])
    util.send(req, resp, _represent(data['name']))


@util.since((1, 2))
def delete(state, req, resp, name):
    util.authorize(state, req, 'placement:resource_classes:delete')
    state.pdb.write(rc_obj.delete, name)
    util.no_content(resp)
