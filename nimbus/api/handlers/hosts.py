"""/os-hosts (below microversion 2.43, where Nova removed it; os-services
and os-hypervisors replace it). Read only: Nova's host actions (reboot,
maintenance mode) need a virt driver that does them, and are not served."""

import sqlalchemy as sa

from nimbus.api import policies
from nimbus.api import util
from nimbus.api.objects import aggregates as agg_obj
from nimbus.api.objects import services as service_obj
from nimbus.db.cell import models as cell_models

REMOVED_IN = (2, 43)
LIST_QUERY = {
    'type': 'object',
    'properties': {
        'zone': {'type': 'string', 'minLength': 1, 'maxLength': 255}
    },
}


def _check_version(req):
    if util.version(req) >= REMOVED_IN:
        raise util.not_found('Resource', 'os-hosts')


def _services(req):
    deps = util.deps(req)
    return service_obj.list_services(
        deps.cells, deps.conf.service_down_time, util.utcnow()
    )


def index(req, resp):
    _check_version(req)
    util.authorize(req, policies.HOSTS % 'list')
    params = util.query(req, LIST_QUERY)
    deps = util.deps(req)
    zones = agg_obj.zones_by_host(deps.api_db)
    hosts = []
    for service in _services(req):
        zone = agg_obj.service_zone(deps.conf, service, zones)
        if 'zone' in params and zone != params['zone']:
            continue
        topic = service['topic'] or service['binary'].replace('nimbus-', '')
        hosts.append(
            {'host_name': service['host'], 'service': topic, 'zone': zone}
        )
    resp.media = {'hosts': hosts}


def _resource(host, project, cpu, memory_mb, disk_gb):
    return {
        'resource': {
            'host': host,
            'project': project,
            'cpu': cpu,
            'memory_mb': memory_mb,
            'disk_gb': disk_gb,
        }
    }


def show(req, resp, host_name):
    """The host's capacity, what its servers use, and per project."""
    _check_version(req)
    util.authorize(req, policies.HOSTS % 'show')
    deps = util.deps(req)
    nodes = [
        n for n in service_obj.list_nodes(deps.cells) if n['host'] == host_name
    ]
    if not nodes:
        raise util.not_found('Compute host', host_name)
    total = [
        sum(n[k] for n in nodes) for k in ('vcpus', 'memory_mb', 'local_gb')
    ]
    used_now = [
        sum(n[k] for n in nodes)
        for k in ('vcpus_used', 'memory_mb_used', 'local_gb_used')
    ]
    projects = {}
    model = cell_models.Instance
    with deps.cells.db(nodes[0]['cell']).session() as session:
        for project_id, flavor in session.execute(
            sa.select(model.project_id, model.flavor).where(
                model.host == host_name, model.deleted.is_(False)
            )
        ):
            sums = projects.setdefault(project_id, [0, 0, 0])
            sums[0] += int(flavor.get('vcpus') or 0)
            sums[1] += int(flavor.get('memory_mb') or 0)
            sums[2] += int(flavor.get('root_gb') or 0) + int(
                flavor.get('ephemeral_gb') or 0
            )
    used_max = [sum(p[i] for p in projects.values()) for i in range(3)]
    body = [
        _resource(host_name, '(total)', *total),
        _resource(host_name, '(used_now)', *used_now),
        _resource(host_name, '(used_max)', *used_max),
    ]
    body.extend(
        _resource(host_name, project, *sums)
        for project, sums in sorted(projects.items())
    )
    resp.media = {'host': body}
