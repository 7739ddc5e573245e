"""/os-hypervisors: compute nodes of every cell with their service state."""

import json

import oslo_messaging as messaging

from nimbus.api import policies
from nimbus.api import util
from nimbus.api.objects import services as service_obj
from nimbus.api.schemas import common
from nimbus.common.wsgi import errors

LIST_QUERY = {
    'type': 'object',
    'properties': dict(
        common.PAGING,
        **{
            'hypervisor_hostname_pattern': {
                'type': 'string',
                'minLength': 1,
                'maxLength': 255,
            },
            'with_servers': common.BOOL_STR,
        },
    ),
}
SHOW_QUERY = {
    'type': 'object',
    'properties': {'with_servers': common.BOOL_STR},
}


def _id(req, node):
    return node['uuid'] if util.version(req) >= (2, 53) else node['id']


def view(req, node, service, detail, servers=None):
    version = util.version(req)
    body = {
        'id': _id(req, node),
        'hypervisor_hostname': node['hypervisor_hostname'],
        'state': 'up' if service and service['up'] else 'down',
        'status': 'disabled'
        if (service is None or service['disabled'])
        else 'enabled',
    }
    if servers is not None:
        body['servers'] = servers
    if not detail:
        return body
    body.update(
        {
            'host_ip': node['host_ip'],
            'hypervisor_type': node['hypervisor_type'],
            'hypervisor_version': node['hypervisor_version'],
            'service': {
                'host': node['host'],
                'id': (
                    service['uuid'] if version >= (2, 53) else service['id']
                )
                if service
                else None,
                'disabled_reason': service['disabled_reason']
                if service
                else None,
            },
        }
    )
    if version >= (2, 88):
        body['uptime'] = None
        return body
    cpu_info = node['cpu_info'] or {}
    body.update(
        {
            'vcpus': node['vcpus'],
            'memory_mb': node['memory_mb'],
            'local_gb': node['local_gb'],
            'vcpus_used': node['vcpus_used'],
            'memory_mb_used': node['memory_mb_used'],
            'local_gb_used': node['local_gb_used'],
            'free_ram_mb': node['memory_mb'] - node['memory_mb_used'],
            'free_disk_gb': node['local_gb'] - node['local_gb_used'],
            'current_workload': node['current_workload'],
            'running_vms': node['running_vms'],
            'disk_available_least': node['local_gb'] - node['local_gb_used'],
            'cpu_info': cpu_info
            if version >= (2, 28)
            else json.dumps(cpu_info),
        }
    )
    return body


def _services(req):
    deps = util.deps(req)
    return service_obj.compute_services_by_host(
        deps.cells, deps.conf.service_down_time, util.utcnow()
    )


def _servers(req, node, params):
    if util.version(req) < (2, 53) or 'with_servers' not in params:
        return None
    if not util.boolish(params['with_servers'], 'with_servers'):
        return None
    return service_obj.instances_on_node(
        util.deps(req).cells,
        node['cell'],
        node['host'],
        node['hypervisor_hostname'],
    )


def _list(req, resp, detail):
    util.authorize(
        req, policies.HYPERVISORS % ('list-detail' if detail else 'list')
    )
    params = util.query(req, LIST_QUERY)
    version = util.version(req)
    if version < (2, 53):
        params.pop('hypervisor_hostname_pattern', None)
        params.pop('with_servers', None)
    if version < (2, 33):
        params.pop('limit', None)
        params.pop('marker', None)
    if 'hypervisor_hostname_pattern' in params and (
        'limit' in params or 'marker' in params
    ):
        raise util.bad_request(
            'Paging over a list of hypervisors with a '
            'hostname pattern is not supported.'
        )
    nodes = service_obj.list_nodes(util.deps(req).cells)
    pattern = params.get('hypervisor_hostname_pattern')
    if pattern is not None:
        nodes = [n for n in nodes if pattern in n['hypervisor_hostname']]
        if not nodes:
            raise util.not_found('Hypervisor matching', pattern)
    limit = util.limit_of(req, params)
    nodes, more = util.page(nodes, lambda n: _id(req, n), params, limit)
    services = _services(req)
    views = [
        view(req, n, services.get(n['host']), detail, _servers(req, n, params))
        for n in nodes
    ]
    resp.media = util.paged_body(
        req,
        'hypervisors',
        views,
        'os-hypervisors',
        detail,
        more,
        lambda: _id(req, nodes[-1]),
        params,
    )


# Deliberately like the flavors' index and detail: one handler per route,
# the list built once in _list.
def index(req, resp):
    _list(req, resp, detail=False)


def detail(req, resp):
    _list(req, resp, detail=True)


def show(req, resp, hypervisor_id):
    util.authorize(req, policies.HYPERVISORS % 'show')
    params = util.query(req, SHOW_QUERY)
    version = util.version(req)
    for node in service_obj.list_nodes(util.deps(req).cells):
        if str(_id(req, node)) == hypervisor_id:
            service = _services(req).get(node['host'])
            resp.media = {
                'hypervisor': view(
                    req, node, service, True, _servers(req, node, params)
                )
            }
            return
    if version >= (2, 53):
        raise (
            util.bad_request('Invalid uuid %s' % hypervisor_id)
            if not _looks_like_uuid(hypervisor_id)
            else util.not_found('Hypervisor', hypervisor_id)
        )
    raise util.not_found('Hypervisor', hypervisor_id)


def _find(req, hypervisor_id):
    for node in service_obj.list_nodes(util.deps(req).cells):
        if str(_id(req, node)) == hypervisor_id:
            return node
    if util.version(req) >= (2, 53) and not _looks_like_uuid(hypervisor_id):
        raise util.bad_request('Invalid uuid %s' % hypervisor_id)
    raise util.not_found('Hypervisor', hypervisor_id)


def uptime(req, resp, hypervisor_id):
    """GET /os-hypervisors/{id}/uptime (below 2.88, where Nova folded the
    uptime into the show): the compute host's virt driver tells it."""
    if util.version(req) >= (2, 88):
        raise util.not_found('Resource', 'uptime')
    util.authorize(req, policies.HYPERVISORS % 'uptime')
    node = _find(req, hypervisor_id)
    service = _services(req).get(node['host'])
    if service is None or not service['up']:
        raise util.bad_request(
            'Compute service of %s is unavailable at this time.' % node['host']
        )
    deps = util.deps(req)
    compute = deps.compute_api_factory(node['cell'])
    # Like action_steps.ask_compute, but a question to a host, not a guest:
    # a refusal is the host's 503, not a guest's 409.
    try:
        text = compute.get_host_uptime(util.ctx(req), node['host'])
    except NotImplementedError as exc:
        raise errors.HTTPError(
            501, 'The virt driver of %s cannot tell its uptime.' % node['host']
        ) from exc
    except messaging.MessagingTimeout as exc:
        raise errors.HTTPError(
            503, 'Compute host %s did not answer in time.' % node['host']
        ) from exc
    except messaging.MessagingException as exc:
        # A compute older than RPC 1.1 answers UnsupportedVersion.
        raise errors.HTTPError(
            503,
            'Compute host %s could not tell its uptime: %s'
            % (node['host'], getattr(exc, 'exc_type', None) or exc),
        ) from exc
    body = view(req, node, service, False)
    body['uptime'] = text
    resp.media = {'hypervisor': body}


def _looks_like_uuid(value):
    from oslo_utils import uuidutils

    return uuidutils.is_uuid_like(value)


def statistics(req, resp):
    """GET /os-hypervisors/statistics (removed in 2.88, as in Nova)."""
    if util.version(req) >= (2, 88):
        raise util.not_found('Resource', 'statistics')
    util.authorize(req, policies.HYPERVISORS % 'list-detail')
    nodes = service_obj.list_nodes(util.deps(req).cells)
    total = {
        k: sum(n[k] for n in nodes)
        for k in (
            'vcpus',
            'memory_mb',
            'local_gb',
            'vcpus_used',
            'memory_mb_used',
            'local_gb_used',
            'current_workload',
            'running_vms',
        )
    }
    total.update(
        count=len(nodes),
        free_ram_mb=total['memory_mb'] - total['memory_mb_used'],
        free_disk_gb=total['local_gb'] - total['local_gb_used'],
        disk_available_least=total['local_gb'] - total['local_gb_used'],
    )
    resp.media = {'hypervisor_statistics': total}
