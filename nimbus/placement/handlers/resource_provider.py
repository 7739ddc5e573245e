"""/resource_providers and /resource_providers/{uuid}."""

from oslo_utils import uuidutils

from nimbus.placement.handlers import query
from nimbus.placement.handlers import util
from nimbus.placement.objects import resource_provider as rp_obj
from nimbus.placement.schemas import resource_provider as schema


def links(prefix, uuid, version):
    """The provider's links; ``prefix`` is where the app is mounted."""
    base = '%s/resource_providers/%s' % (prefix, uuid)
    out = [
        {'rel': 'self', 'href': base},
        {'rel': 'inventories', 'href': base + '/inventories'},
        {'rel': 'usages', 'href': base + '/usages'},
    ]
    if version >= (1, 1):
        out.append({'rel': 'aggregates', 'href': base + '/aggregates'})
    if version >= (1, 6):
        out.append({'rel': 'traits', 'href': base + '/traits'})
    if version >= (1, 11):
        out.append({'rel': 'allocations', 'href': base + '/allocations'})
    return out


def represent(prefix, uuid, name, generation, parent, root, version):
    out = {
        'uuid': uuid,
        'name': name,
        'generation': generation,
        'links': links(prefix, uuid, version),
    }
    if version >= (1, 14):
        out['parent_provider_uuid'] = parent
        out['root_provider_uuid'] = root
    return out


def _from_row(req, row, version):
    return represent(
        req.root_path,
        row['uuid'],
        row['name'],
        row['generation'],
        row['parent_provider_uuid'],
        row['root_provider_uuid'],
        version,
    )


def create(state, req, resp):
    util.authorize(state, req, 'placement:resource_providers:create')
    version = util.version(req)
    data = util.body(req, schema.post_schema(version))
    uuid = util.normalize_uuid(data.get('uuid') or uuidutils.generate_uuid())
    row = rp_obj.create_in(
        state.pdb, uuid, data['name'], data.get('parent_provider_uuid')
    )
    if version >= (1, 20):
        util.location(req, resp, '/resource_providers/%s' % uuid)
        util.send(
            req,
            resp,
            _from_row(req, row, version),
            last_modified=row['updated_at'],
        )
    else:
        util.created(req, resp, '/resource_providers/%s' % uuid)


@util.json_only
def show(state, req, resp, uuid):
    util.authorize(state, req, 'placement:resource_providers:show')
    row = state.pdb.read(rp_obj.get, uuid)
    util.send(
        req,
        resp,
        _from_row(req, row, util.version(req)),
        last_modified=row['updated_at'] or row['created_at'],
    )


def update(state, req, resp, uuid):
    util.authorize(state, req, 'placement:resource_providers:update')
    version = util.version(req)
    data = util.body(req, schema.put_schema(version))
    parent = rp_obj.UNSET
    if 'parent_provider_uuid' in data:
        parent = data['parent_provider_uuid']
        if parent is not None:
            parent = util.normalize_uuid(parent)
    row = state.pdb.write(
        rp_obj.update,
        uuid,
        data['name'],
        parent,
        allow_reparent=version >= (1, 37),
    )
    util.send(
        req,
        resp,
        _from_row(req, row, version),
        last_modified=row['updated_at'],
    )


def delete(state, req, resp, uuid):
    util.authorize(state, req, 'placement:resource_providers:delete')
    state.pdb.write(rp_obj.delete, uuid)
    util.no_content(resp)


@util.json_only
def list_providers(state, req, resp):
    util.authorize(state, req, 'placement:resource_providers:list')
    version = util.version(req)
    util.check_query(req, schema.list_params(version))
    snapshot = state.cache.get()
    filters = query.parse(util.params(req), version, snapshot)
    found = query.filter_providers(snapshot, **filters)
    prefix = req.root_path
    body = {
        'resource_providers': [
            represent(
                prefix,
                p.uuid,
                p.name,
                p.generation,
                p.parent_uuid,
                p.root_uuid,
                version,
            )
            for p in found
        ]
    }
    util.send(req, resp, body)
