"""/os-services: list from every cell; enable, disable, force down."""

from nimbus.api import policies
from nimbus.api import scheduler_cache
from nimbus.api import util
from nimbus.api.objects import aggregates as agg_obj
from nimbus.api.objects import placement_sync
from nimbus.api.objects import services as service_obj
from nimbus.api.schemas import services as schema
from nimbus.common.objects import ServiceInfo
from nimbus.common.wsgi import json_body


def _down_time(req):
    return util.deps(req).conf.service_down_time


def view(req, service, zones):
    version = util.version(req)
    body = {
        'id': service['uuid'] if version >= (2, 53) else service['id'],
        'binary': service_obj.shown_binary(service['binary']),
        'host': service['host'],
        'zone': agg_obj.service_zone(util.deps(req).conf, service, zones),
        'status': 'disabled' if service['disabled'] else 'enabled',
        'state': 'up' if service['up'] else 'down',
        'updated_at': util.isotime(service['updated_at']),
        'disabled_reason': service['disabled_reason'],
    }
    if version >= (2, 11):
        body['forced_down'] = service['forced_down']
    return body


def index(req, resp):
    util.authorize(req, policies.SERVICES % 'list')
    params = util.query(req, schema.LIST_QUERY)
    services = service_obj.list_services(
        util.deps(req).cells,
        _down_time(req),
        util.utcnow(),
        params.get('host'),
        service_obj.stored_binary(params.get('binary')),
    )
    zones = agg_obj.zones_by_host(util.deps(req).api_db)
    resp.media = {'services': [view(req, s, zones) for s in services]}


def _legacy_update(req, resp, action):
    body = json_body(req, schema.UPDATE_LEGACY)
    values = {}
    if action == 'enable':
        values = {'disabled': False, 'disabled_reason': None}
    elif action == 'disable':
        values = {'disabled': True}
    elif action == 'disable-log-reason':
        if 'disabled_reason' not in body:
            raise util.bad_request('Missing disabled_reason field')
        values = {'disabled': True, 'disabled_reason': body['disabled_reason']}
    elif action == 'force-down':
        if 'forced_down' not in body:
            raise util.bad_request('Missing forced_down field')
        values = {'forced_down': body['forced_down']}
    deps = util.deps(req)
    try:
        cell, row_id = service_obj.find_by_host_binary(
            deps.cells, body['host'], service_obj.stored_binary(body['binary'])
        )
    except service_obj.ServiceNotFound as exc:
        raise util.not_found(
            'Service', '%s/%s' % (body['host'], body['binary'])
        ) from exc
    service = service_obj.update(
        deps.cells, row_id, values, _down_time(req), util.utcnow(), cell=cell
    )
    announce(req, service, values)
    result = {
        'host': body['host'],
        'binary': service_obj.shown_binary(service['binary']),
    }
    if 'disabled' in values:
        result['status'] = 'disabled' if values['disabled'] else 'enabled'
    if 'disabled_reason' in values and values['disabled_reason']:
        result['disabled_reason'] = values['disabled_reason']
    if 'forced_down' in values:
        result['forced_down'] = values['forced_down']
    resp.media = {'service': result}


def announce(req, service, values):
    """After ``values`` changed ``service``: mirror a compute's disabled
    state onto its resource provider, and tell the scheduler (os-hosts'
    host update uses this too)."""
    _mirror(req, service, values)
    _tell_schedulers(req, service)


def _mirror(req, service, values):
    if 'disabled' in values and service['binary'] == 'nimbus-compute':
        placement_sync.mirror_disabled(
            util.deps(req).placement,
            util.ctx(req),
            service['host'],
            values['disabled'],
        )


def update(req, resp, service_id):
    util.authorize(req, policies.SERVICES % 'update')
    version = util.version(req)
    if version < (2, 53):
        if service_id not in (
            'enable',
            'disable',
            'disable-log-reason',
            'force-down',
        ):
            raise util.not_found('Service action', service_id)
        return _legacy_update(req, resp, service_id)
    body = json_body(req, schema.UPDATE_V253)
    values = {}
    if 'status' in body:
        values['disabled'] = body['status'] == 'disabled'
        values['disabled_reason'] = (
            body.get('disabled_reason') if values['disabled'] else None
        )
    elif 'disabled_reason' in body:
        raise util.bad_request(
            "'disabled_reason' may only be given with 'status': 'disabled'."
        )
    if body.get('disabled_reason') and body.get('status') == 'enabled':
        raise util.bad_request(
            "'disabled_reason' may only be given with 'status': 'disabled'."
        )
    if 'forced_down' in body:
        values['forced_down'] = body['forced_down']
    deps = util.deps(req)
    try:
        service = service_obj.update(
            deps.cells, service_id, values, _down_time(req), util.utcnow()
        )
    except service_obj.ServiceNotFound as exc:
        raise util.not_found('Service', service_id) from exc
    announce(req, service, values)
    zones = agg_obj.zones_by_host(deps.api_db)
    resp.media = {'service': view(req, service, zones)}


def _tell_schedulers(req, service):
    """Every scheduler's host states see the service's new state at once."""
    fields = ('host', 'binary', 'disabled', 'disabled_reason', 'forced_down')
    info = {k: service[k] for k in fields + ('up',)}
    scheduler_cache.service_changed(req, ServiceInfo.from_primitive(info))


def delete(req, resp, service_id):
    util.authorize(req, policies.SERVICES % 'delete')
    if util.version(req) >= (2, 53) and str(service_id).isdigit():
        raise util.bad_request('Invalid uuid %s' % service_id)
    try:
        service_obj.delete(
            util.deps(req).api_db, util.deps(req).cells, service_id
        )
    except service_obj.ServiceNotFound as exc:
        raise util.not_found('Service', service_id) from exc
    resp.status = 204
