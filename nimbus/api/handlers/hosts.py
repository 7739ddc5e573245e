"""/os-hosts (below microversion 2.43, where Nova removed it; os-services
and os-hypervisors replace it).

``PUT /os-hosts/{host}`` enables or disables the host's compute service
in the services table, as os-services does. Maintenance mode (which
evacuates the host's guests) and the power actions (``reboot``,
``shutdown``, ``startup``) need a virt driver that can do them: Nimbus's
cannot, so a known host answers 501, as Nova does for such a driver."""

from nimbus.api import policies
from nimbus.api import util
from nimbus.api.handlers import services as services_handler
from nimbus.api.objects import aggregates as agg_obj
from nimbus.api.objects import services as service_obj
from nimbus.api.schemas import hosts as schema
from nimbus.common.wsgi import errors
from nimbus.common.wsgi import json_body
from nimbus.db.cell_instances import queries as instance_queries

REMOVED_IN = (2, 43)
COMPUTE = 'nimbus-compute'


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
    params = util.query(req, schema.LIST_QUERY)
    deps = util.deps(req)
    zones = agg_obj.zones_by_host(deps.api_db)
    hosts = []
    for service in _services(req):
        zone = agg_obj.service_zone(deps.conf, service, zones)
        if params.get('zone') and zone != params['zone']:
            continue
        # The service's kind from its binary (nimbus-conductor ->
        # conductor): service rows store topic 'compute' whatever they
        # are, which listed a cell conductor as a compute host.
        topic = service['binary'].replace('nimbus-', '')
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
    with deps.cells.db(nodes[0]['cell']).session() as session:
        for project_id, flavor in instance_queries.on_host_by_project(
            session, host_name
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


def _compute_service(req, host_name):
    """``(cell, service row id)`` of the host's compute service; 404 when
    the host runs none (Nova's host actions reach a compute host)."""
    try:
        return service_obj.find_by_host_binary(
            util.deps(req).cells, host_name, COMPUTE
        )
    except service_obj.ServiceNotFound as exc:
        raise util.not_found('Compute host', host_name) from exc


def _not_supported(what):
    return errors.HTTPError(
        501, 'The virt driver of this cloud cannot %s a host.' % what
    )


def update(req, resp, host_name):
    """``{"status": "enable"|"disable", "maintenance_mode": ...}``: the
    status goes to the compute service's ``disabled`` flag."""
    _check_version(req)
    util.authorize(req, policies.HOSTS % 'update')
    body = json_body(req, schema.UPDATE)
    if not body:
        raise util.bad_request(
            "Invalid input: give 'status' or 'maintenance_mode' "
            "('enable' or 'disable')."
        )
    cell, row_id = _compute_service(req, host_name)
    if 'maintenance_mode' in body:
        # Refused before anything changes, so a request naming both does
        # not half happen.
        raise _not_supported('put into (or take out of) maintenance mode')
    enable = body['status'].strip().lower() == 'enable'
    values = {'disabled': not enable}
    if enable:
        values['disabled_reason'] = None
    deps = util.deps(req)
    service = service_obj.update(
        deps.cells,
        row_id,
        values,
        deps.conf.service_down_time,
        util.utcnow(),
        cell=cell,
    )
    services_handler.announce(req, service, values)
    resp.media = {
        'host': host_name,
        'status': 'disabled' if service['disabled'] else 'enabled',
    }


def _power_action(req, host_name, rule, verb):
    _check_version(req)
    util.authorize(req, policies.HOSTS % rule)
    _compute_service(req, host_name)
    raise _not_supported(verb)


def reboot(req, resp, host_name):
    _power_action(req, host_name, 'reboot', 'reboot')


def shutdown(req, resp, host_name):
    _power_action(req, host_name, 'shutdown', 'shut down')


def startup(req, resp, host_name):
    _power_action(req, host_name, 'start', 'start up')
