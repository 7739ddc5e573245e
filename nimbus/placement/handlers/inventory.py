"""/resource_providers/{uuid}/inventories[/{resource_class}]."""

from nimbus.placement import exception
from nimbus.placement.handlers import util
from nimbus.placement.objects import inventory as inv_obj
from nimbus.placement.objects import resource_provider as rp_obj
from nimbus.placement.schemas import inventory as schema


def _check_reserved(req, rc, inv):
    inv = inv_obj.with_defaults(inv)
    if util.version(req) >= (1, 26):
        bad = inv['reserved'] > inv['total']
    else:
        bad = inv['reserved'] >= inv['total'] and inv['reserved'] > 0
    if bad:
        raise exception.BadRequest(
            'Unable to update inventory for resource provider: invalid '
            'inventory for %s: reserved %d must not exceed total %d.' % (
                rc, inv['reserved'], inv['total']))
    if inv['min_unit'] > inv['max_unit']:
        raise exception.BadRequest(
            'Unable to update inventory: min_unit %d exceeds max_unit %d '
            'for %s.' % (inv['min_unit'], inv['max_unit'], rc))
    return inv


def _url(uuid, rc=None):
    url = '/resource_providers/%s/inventories' % uuid
    return url + '/' + rc if rc else url


def list_inventories(state, req, resp, uuid):
    util.authorize(state, req,
                   'placement:resource_providers:inventories:list')

    def load(conn):
        rp = rp_obj.get(conn, uuid)
        return rp, inv_obj.get_all(conn, rp['id'])
    rp, invs = state.pdb.read(load)
    util.send(req, resp, {'inventories': invs,
                          'resource_provider_generation': rp['generation']})


def show(state, req, resp, uuid, rc):
    util.authorize(state, req,
                   'placement:resource_providers:inventories:show')

    def load(conn):
        rp = rp_obj.get(conn, uuid)
        return rp, inv_obj.get_all(conn, rp['id'])
    rp, invs = state.pdb.read(load)
    if rc not in invs:
        raise exception.NotFound(
            'No inventory of class %s for %s' % (rc, uuid))
    util.send(req, resp, dict(invs[rc],
                              resource_provider_generation=rp['generation']))


def _write(state, fn, uuid, *args):
    """``fn(conn, rp, *args) -> (generation, inventories)`` in a write."""
    def run(conn):
        return fn(conn, rp_obj.get_ref(conn, uuid), *args)
    return state.pdb.write(run, late_lock=True)


def create(state, req, resp, uuid):
    util.authorize(state, req,
                   'placement:resource_providers:inventories:create')
    data = util.body(req, schema.POST_INVENTORY)
    rc = data.pop('resource_class')
    gen = data.pop('resource_provider_generation', None)
    inv = _check_reserved(req, rc, data)

    def add(conn, rp, gen, rc, inv):
        # The generation is optional on POST (clients such as openstacksdk
        # omit it); when given it is checked.
        return inv_obj.add_one(conn, rp, rp['generation'] if gen is None
                               else gen, rc, inv)
    gen, invs = _write(state, add, uuid, gen, rc, inv)
    resp.set_header('location', _url(uuid, rc))
    util.send(req, resp, dict(invs[rc], resource_provider_generation=gen),
              status=201)


def update(state, req, resp, uuid, rc):
    util.authorize(state, req,
                   'placement:resource_providers:inventories:update')
    data = util.body(req, schema.BASE_INVENTORY)
    gen = data.pop('resource_provider_generation')
    inv = _check_reserved(req, rc, data)
    gen, invs = _write(state, inv_obj.update_one, uuid, gen, rc, inv)
    util.send(req, resp, dict(invs[rc], resource_provider_generation=gen))


def set_all(state, req, resp, uuid):
    util.authorize(state, req,
                   'placement:resource_providers:inventories:update')
    data = util.body(req, schema.PUT_INVENTORIES)
    invs = {rc: _check_reserved(req, rc, inv)
            for rc, inv in data['inventories'].items()}
    gen, invs = _write(state, inv_obj.replace_all, uuid,
                       data['resource_provider_generation'], invs)
    util.send(req, resp, {'inventories': invs,
                          'resource_provider_generation': gen})


def delete(state, req, resp, uuid, rc):
    util.authorize(state, req,
                   'placement:resource_providers:inventories:delete')
    _write(state, inv_obj.delete_one, uuid, rc)
    util.no_content(resp)


@util.since((1, 5), status=405)
def delete_all(state, req, resp, uuid):
    util.authorize(state, req,
                   'placement:resource_providers:inventories:delete')

    def run(conn):
        rp = rp_obj.get_ref(conn, uuid)
        return inv_obj.set_all(conn, rp, rp['generation'], {})
    state.pdb.write(run)
    util.no_content(resp)
