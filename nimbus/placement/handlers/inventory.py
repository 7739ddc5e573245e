"""/resource_providers/{uuid}/inventories[/{resource_class}]."""

from nimbus.placement import exception
from nimbus.placement.handlers import util
from nimbus.placement.objects import inventory as inv_obj
from nimbus.placement.objects import resource_provider as rp_obj
from nimbus.placement.schemas import inventory as schema


def check_capacity(req, rc, inv):
    """``inv`` with its defaults; 400 when its capacity is not allowed.

    Capacity is ``int((total - reserved) * allocation_ratio)``: it must be
    positive before 1.26 and may be zero from 1.26 (reserved == total).
    Like Placement there is no other cross-field check (min_unit may exceed
    max_unit, any ratio that gives such a capacity is accepted).
    """
    inv = inv_obj.with_defaults(inv)
    capacity = int((inv['total'] - inv['reserved']) * inv['allocation_ratio'])
    if util.version(req) >= (1, 26):
        bad, rule = capacity < 0, 'must not be negative'
    else:
        bad, rule = capacity <= 0, 'must be positive before 1.26'
    if bad:
        raise exception.BadRequest(
            'Unable to update inventory for resource provider: invalid '
            'inventory for %s: capacity (total %d - reserved %d) * '
            'allocation_ratio %s = %d %s.'
            % (
                rc,
                inv['total'],
                inv['reserved'],
                inv['allocation_ratio'],
                capacity,
                rule,
            )
        )
    return inv


def _url(uuid, rc=None):
    url = '/resource_providers/%s/inventories' % uuid
    return url + '/' + rc if rc else url


@util.json_only
def list_inventories(state, req, resp, uuid):
    util.authorize(state, req, 'placement:resource_providers:inventories:list')
    util.send_of_provider(
        state, req, resp, uuid, 'inventories', inv_obj.get_all
    )


@util.json_only
def show(state, req, resp, uuid, rc):
    util.authorize(state, req, 'placement:resource_providers:inventories:show')
    gen, invs = util.of_provider(state, uuid, inv_obj.get_all)
    if rc not in invs:
        raise exception.NotFound(
            'No inventory of class %s for %s' % (rc, uuid)
        )
    util.send(req, resp, dict(invs[rc], resource_provider_generation=gen))


def _write(state, fn, uuid, *args):
    """``fn(conn, rp, *args) -> (generation, inventories)`` in a write."""

    def run(conn):
        return fn(conn, rp_obj.get_ref(conn, uuid), *args)

    return state.pdb.write(run, late_lock=True)


def create(state, req, resp, uuid):
    util.authorize(
        state, req, 'placement:resource_providers:inventories:create'
    )
    data = util.body(req, schema.POST_INVENTORY)
    rc = data.pop('resource_class')
    # The schema allows a generation but, as in OpenStack Placement, POST
    # does not check it: the provider's current one is used.
    data.pop('resource_provider_generation', None)
    inv = check_capacity(req, rc, data)

    def add(conn, rp, rc, inv):
        return inv_obj.add_one(conn, rp, rp['generation'], rc, inv)

    gen, invs = _write(state, add, uuid, rc, inv)
    util.location(req, resp, _url(uuid, rc))
    util.send(
        req, resp, dict(invs[rc], resource_provider_generation=gen), status=201
    )


def update(state, req, resp, uuid, rc):
    util.authorize(
        state, req, 'placement:resource_providers:inventories:update'
    )
    data = util.body(req, schema.BASE_INVENTORY)
    gen = data.pop('resource_provider_generation')
    inv = check_capacity(req, rc, data)
    gen, invs = _write(state, inv_obj.update_one, uuid, gen, rc, inv)
    util.send(req, resp, dict(invs[rc], resource_provider_generation=gen))


def set_all(state, req, resp, uuid):
    util.authorize(
        state, req, 'placement:resource_providers:inventories:update'
    )
    data = util.body(req, schema.PUT_INVENTORIES)
    invs = {
        rc: check_capacity(req, rc, inv)
        for rc, inv in data['inventories'].items()
    }

    def run(conn):
        rp, rows = rp_obj.get_ref_with(conn, uuid, *inv_obj.CLASS_COLUMNS)
        return inv_obj.replace_all(
            conn,
            rp,
            data['resource_provider_generation'],
            invs,
            classes=[r[0] for r in rows],
        )

    gen, invs = state.pdb.write(run, late_lock=True)
    util.send(
        req, resp, {'inventories': invs, 'resource_provider_generation': gen}
    )


def delete(state, req, resp, uuid, rc):
    util.authorize(
        state, req, 'placement:resource_providers:inventories:delete'
    )
    try:
        _write(state, inv_obj.delete_one, uuid, rc)
    except exception.InventoryInUse as exc:
        # OpenStack Placement codes this one concurrent_update (removing
        # an in-use class with PUT or DELETE of all is inventory.inuse).
        raise exception.Conflict(
            exc.message, error_code=exception.CONCURRENT_UPDATE
        ) from exc
    util.no_content(resp)


@util.since((1, 5), status=405)
def delete_all(state, req, resp, uuid):
    util.authorize(
        state, req, 'placement:resource_providers:inventories:delete'
    )

    def run(conn):
        rp = rp_obj.get_ref(conn, uuid)
        return inv_obj.set_all(conn, rp, rp['generation'], {})

    state.pdb.write(run)
    util.no_content(resp)
