"""/os-hypervisors/{pattern}/search and /{pattern}/servers, below
microversion 2.53 (from 2.53 the list takes ``hypervisor_hostname_pattern``
and ``with_servers`` instead, and these routes are 404, as in Nova)."""

from nimbus.api import policies
from nimbus.api import util
from nimbus.api.handlers import hypervisors
from nimbus.api.objects import services as service_obj

REMOVED_IN = (2, 53)


def _matching(req, pattern, rule):
    if util.version(req) >= REMOVED_IN:
        raise util.not_found('Resource', 'os-hypervisors/%s' % pattern)
    util.authorize(req, policies.HYPERVISORS % rule)
    nodes = [
        n
        for n in service_obj.list_nodes(util.deps(req).cells)
        if pattern in n['hypervisor_hostname']
    ]
    if not nodes:
        raise util.not_found('Hypervisor matching', pattern)
    return nodes


def search(req, resp, hypervisor_id):
    """``hypervisor_id`` is the pattern (the route table shares the segment
    with ``/os-hypervisors/{hypervisor_id}``)."""
    nodes = _matching(req, hypervisor_id, 'search')
    services = hypervisors._services(req)
    resp.media = {
        'hypervisors': [
            hypervisors.view(req, n, services.get(n['host']), False)
            for n in nodes
        ]
    }


def servers(req, resp, hypervisor_id):
    """Nova leaves ``servers`` out of a hypervisor that has none."""
    nodes = _matching(req, hypervisor_id, 'servers')
    services = hypervisors._services(req)
    cells = util.deps(req).cells
    body = []
    for node in nodes:
        instances = service_obj.instances_on_node(
            cells, node['cell'], node['host'], node['hypervisor_hostname']
        )
        body.append(
            hypervisors.view(
                req, node, services.get(node['host']), False, instances or None
            )
        )
    resp.media = {'hypervisors': body}
