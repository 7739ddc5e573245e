"""/os-aggregates: CRUD and the add_host/remove_host/set_metadata actions."""

from oslo_log import log as logging

from nimbus.api import policies
from nimbus.api import scheduler_cache
from nimbus.api import util
from nimbus.api.objects import aggregates as agg_obj
from nimbus.api.objects import placement_sync
from nimbus.api.objects import services as service_obj
from nimbus.api.schemas import aggregates as schema
from nimbus.common.objects import AggregateInfo
from nimbus.common.wsgi import json_body

LOG = logging.getLogger(__name__)


def view(req, agg, members=True):
    """An aggregate as Nova shows it; its create response (``members``
    False) has no ``hosts`` and no ``metadata``."""
    body = {
        'id': agg['id'],
        'name': agg['name'],
        'availability_zone': agg['availability_zone'],
        'created_at': util.isotime(agg['created_at']),
        'updated_at': util.isotime(agg['updated_at']),
        'deleted': False,
        'deleted_at': None,
    }
    if members:
        body.update(hosts=agg['hosts'], metadata=agg['metadata'])
    if util.version(req) >= (2, 41):
        body['uuid'] = agg['uuid']
    return body


def _notify(req, agg, deleted=False):
    """Tell the schedulers (their host states cache aggregates)."""
    info = AggregateInfo.from_primitive(
        {k: agg[k] for k in ('id', 'uuid', 'name', 'hosts', 'metadata')}
    )
    if deleted:
        scheduler_cache.aggregate_deleted(req, info)
    else:
        scheduler_cache.aggregate_changed(req, info)


def _mirror_to_placement(req, host, agg_uuid, add):
    placement_sync.mirror_aggregate(
        util.deps(req).placement, util.ctx(req), host, agg_uuid, add
    )


def _get(req, aggregate_id):
    """The aggregate, or a 404. As in Nova, an id that is not an integer
    (``abc``) is a 400, and an integer that is no aggregate's (``-1``,
    ``999``) is not found."""
    try:
        number = int(str(aggregate_id), 10)
    except ValueError as exc:
        raise util.bad_request(
            'Invalid aggregate id %s: expected an integer.' % aggregate_id
        ) from exc
    try:
        return agg_obj.get(util.deps(req).api_db, number)
    except agg_obj.AggregateNotFound as exc:
        raise util.not_found('Aggregate', aggregate_id) from exc


def index(req, resp):
    util.authorize(req, policies.AGGREGATES % 'index')
    resp.media = {
        'aggregates': [
            view(req, a) for a in agg_obj.list_all(util.deps(req).api_db)
        ]
    }


def show(req, resp, aggregate_id):
    util.authorize(req, policies.AGGREGATES % 'show')
    resp.media = {'aggregate': view(req, _get(req, aggregate_id))}


def _check_zone_conflicts(req, hosts, zone, skip_id):
    """A host may be in one availability zone only."""
    if not zone:
        return
    for other in agg_obj.list_all(util.deps(req).api_db):
        if other['id'] == skip_id or not other['availability_zone']:
            continue
        if other['availability_zone'] == zone:
            continue
        clash = set(hosts) & set(other['hosts'])
        if clash:
            raise util.bad_request(
                'Cannot put host %s in availability zone %s: it is in '
                'availability zone %s through aggregate %s.'
                % (
                    sorted(clash)[0],
                    zone,
                    other['availability_zone'],
                    other['name'],
                )
            )


def create(req, resp):
    util.authorize(req, policies.AGGREGATES % 'create')
    body = json_body(req, schema.CREATE)['aggregate']
    try:
        agg = agg_obj.create(
            util.deps(req).api_db, body['name'], body.get('availability_zone')
        )
    except agg_obj.AggregateExists as exc:
        raise util.conflict(
            'Aggregate %s already exists.' % body['name']
        ) from exc
    _notify(req, agg)
    resp.media = {'aggregate': view(req, agg, members=False)}


def update(req, resp, aggregate_id):
    util.authorize(req, policies.AGGREGATES % 'update')
    body = json_body(req, schema.UPDATE)['aggregate']
    agg = _get(req, aggregate_id)
    set_zone = 'availability_zone' in body
    if set_zone:
        _check_zone_conflicts(
            req, agg['hosts'], body['availability_zone'], agg['id']
        )
    try:
        agg = agg_obj.update(
            util.deps(req).api_db,
            agg['id'],
            name=body.get('name'),
            availability_zone=body.get('availability_zone'),
            set_zone=set_zone,
        )
    except agg_obj.AggregateExists as exc:
        raise util.conflict(
            'Aggregate %s already exists.' % body['name']
        ) from exc
    _notify(req, agg)
    resp.media = {'aggregate': view(req, agg)}


def delete(req, resp, aggregate_id):
    util.authorize(req, policies.AGGREGATES % 'delete')
    agg = _get(req, aggregate_id)
    if agg['hosts']:
        raise util.bad_request(
            'Aggregate %s is not empty: remove its hosts first.' % aggregate_id
        )
    agg_obj.delete(util.deps(req).api_db, agg['id'])
    _notify(req, agg, deleted=True)
    resp.status = 200


def action(req, resp, aggregate_id):
    body = json_body(req, schema.ACTION)
    name, args = next(iter(body.items()))
    util.authorize(req, policies.AGGREGATES % name)
    agg = _get(req, aggregate_id)
    deps = util.deps(req)
    if name == 'add_host':
        host = args['host']
        if not service_obj.known_host(deps.api_db, deps.cells, host):
            raise util.not_found('Compute host', host)
        if host in agg['hosts']:
            raise util.conflict(
                'Host %s is already in aggregate %s.' % (host, aggregate_id)
            )
        _check_zone_conflicts(req, [host], agg['availability_zone'], agg['id'])
        agg = agg_obj.add_host(deps.api_db, agg['id'], host)
        _mirror_to_placement(req, host, agg['uuid'], add=True)
    elif name == 'remove_host':
        host = args['host']
        if host not in agg['hosts']:
            raise util.not_found('Host %s in aggregate' % host, aggregate_id)
        agg = agg_obj.remove_host(deps.api_db, agg['id'], host)
        _mirror_to_placement(req, host, agg['uuid'], add=False)
    else:
        metadata = args['metadata']
        try:
            agg_obj.check_metadata(metadata)
        except agg_obj.InvalidMetadata as exc:
            raise util.bad_request(str(exc)) from exc
        if agg_obj.AZ_KEY in metadata:
            zone = metadata[agg_obj.AZ_KEY]
            if zone is not None and ':' in zone:
                raise util.bad_request(
                    'An availability zone name may not contain ":".'
                )
            _check_zone_conflicts(req, agg['hosts'], zone, agg['id'])
        agg = agg_obj.set_metadata(deps.api_db, agg['id'], metadata)
    _notify(req, agg)
    resp.media = {'aggregate': view(req, agg)}
