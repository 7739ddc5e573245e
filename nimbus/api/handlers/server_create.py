"""POST /servers: validate, store build requests, cast to the conductor.

:func:`request_spec_for` is shared with the scheduler dry run.
"""

import json

from oslo_log import log as logging
from oslo_utils import uuidutils

from nimbus import extra_specs
from nimbus.api import policies
from nimbus.api import scheduler_cache
from nimbus.api import util
from nimbus.api.objects import aggregates as agg_obj
from nimbus.api.objects import flavor_access
from nimbus.api.objects import flavors as flavor_obj
from nimbus.api.objects import images as image_obj
from nimbus.api.objects import keypairs as keypair_obj
from nimbus.api.objects import quota_usage
from nimbus.api.objects import server_groups as group_obj
from nimbus.api.objects import servers as server_obj
from nimbus.api.schemas import servers as schema
from nimbus.common import instance_states as states
from nimbus.common.clients import accelerator
from nimbus.common.objects import RequestSpec
from nimbus.common.objects import ServerGroupInfo
from nimbus.common.wsgi import errors
from nimbus.common.wsgi import json_body

LOG = logging.getLogger(__name__)


def _ref_id(ref):
    """``flavorRef``/``imageRef`` may be an id or a URL ending in one."""
    ref = str(ref).strip()
    return ref.rstrip('/').rsplit('/', 1)[-1] if '/' in ref else ref


def lookup_flavor(req, ref):
    flavor_id = _ref_id(ref)
    try:
        flavor = flavor_obj.get(util.deps(req).api_db, flavor_id)
    except flavor_obj.FlavorNotFound as exc:
        raise util.bad_request(
            'Flavor %s could not be found.' % flavor_id
        ) from exc
    if flavor['disabled']:
        raise util.bad_request('Flavor %s is disabled.' % flavor_id)
    if not flavor_access.visible(flavor, util.ctx(req)):
        # A private flavor is its granted projects' and the admins'; to
        # anyone else it does not exist (Nova's 400).
        raise util.bad_request('Flavor %s could not be found.' % flavor_id)
    return flavor


def lookup_image(req, ref):
    image_id = _ref_id(ref)
    try:
        image = image_obj.get(util.deps(req).api_db, image_id)
    except image_obj.ImageNotFound as exc:
        raise util.bad_request(
            'Image %s could not be found.' % image_id
        ) from exc
    ctx = util.ctx(req)
    if (
        image['visibility'] not in ('public', 'community', 'shared')
        and not ctx.is_admin
        and image['owner'] != ctx.project_id
    ):
        raise util.bad_request('Image %s could not be found.' % image_id)
    if image['status'] != 'active':
        raise util.bad_request('Image %s is not active.' % image_id)
    return image


def normalise_hints(hints):
    out = dict(hints or {})
    for key in ('same_host', 'different_host'):
        if isinstance(out.get(key), str):
            out[key] = [out[key]]
    if isinstance(out.get('query'), (dict, list)):
        out['query'] = json.dumps(out['query'])
    if isinstance(out.get('query'), str) and out['query']:
        try:
            json.loads(out['query'])
        except ValueError as exc:
            raise util.bad_request(
                "Invalid scheduler hint 'query': not valid JSON."
            ) from exc
    mask = out.pop('cidr_mask', None)
    if mask is not None and 'cidr' not in out:
        out['cidr'] = '/' + str(mask).lstrip('/')
    if 'cidr' in out and 'build_near_host_ip' not in out:
        raise util.bad_request(
            "Scheduler hint 'cidr' needs 'build_near_host_ip'."
        )
    return out


def _zone(req, requested):
    """``(zone, forced_host, forced_node)`` from ``availability_zone``."""
    conf = util.deps(req).conf
    if requested is None:
        return conf.api.default_schedule_zone, None, None
    zone, host, node = (requested.split(':') + [None, None])[:3]
    if host or node:
        util.authorize(req, policies.SERVERS % 'create:forced_host')
    zone = zone or None
    if zone is not None:
        known = agg_obj.zone_names(util.deps(req).api_db)
        # The zone of hosts in no zoned aggregate: the scheduler's option,
        # the one its request filter and AvailabilityZoneFilter apply.
        known.add(agg_obj.default_zone(conf))
        if zone not in known:
            raise util.bad_request(
                'The requested availability zone is not available: %s' % zone
            )
    return zone, host or None, node or None


def _group(req, hints, new_uuids):
    uuid = hints.get('group')
    if uuid is None:
        return None
    deps = util.deps(req)
    try:
        group = group_obj.get(deps.api_db, uuid)
    except group_obj.GroupNotFound as exc:
        raise util.bad_request(
            'Invalid scheduler hint group: server group '
            '%s could not be found.' % uuid
        ) from exc
    ctx = util.ctx(req)
    if not ctx.is_admin and group['project_id'] != ctx.project_id:
        raise util.bad_request(
            'Invalid scheduler hint group: server group '
            '%s could not be found.' % uuid
        )
    hosts = server_obj.hosts_of(deps.api_db, deps.cells, group['members'])
    return {
        'uuid': group['uuid'],
        'name': group['name'],
        'policy': group['policy'],
        'rules': group['rules'],
        'members': group['members'] + list(new_uuids),
        'hosts': hosts,
    }


def _check_image_properties(image):
    if image is None:
        return
    try:
        extra_specs.validate_image_properties(image['properties'] or {})
    except extra_specs.ExtraSpecValidationError as exc:
        raise util.bad_request('Image %s: %s' % (image['id'], exc)) from exc


def device_profile_groups(req, flavor):
    """The request groups of the flavor's ``accel:device_profile`` (requester
    ids ``device_profile_<N>``), so the scheduler asks placement for the
    accelerators too. A server must not boot without its accelerators: no
    accelerator service, an unknown profile or a malformed one is a 400."""
    name = flavor['extra_specs'].get('accel:device_profile')
    if not name:
        return []
    client = util.deps(req).accelerator
    if client is None:
        raise util.bad_request(
            'Flavor %s requests device profile %s but no accelerator service '
            'is configured.' % (flavor['flavorid'], name)
        )
    try:
        return client.get_device_request_groups(util.ctx(req), name)
    except accelerator.DeviceProfileError as exc:
        raise util.bad_request(
            'Flavor %s requests device profile %s: %s'
            % (flavor['flavorid'], name, exc)
        ) from exc
    except accelerator.AcceleratorError as exc:
        LOG.warning('Device profile %s: %s', name, exc)
        raise errors.HTTPError(
            503,
            'The accelerator service could not '
            'resolve device profile %s.' % name,
        ) from exc


def request_spec_for(
    req,
    flavor,
    image,
    zone,
    hints,
    uuids,
    min_count=1,
    force_host=None,
    force_node=None,
    is_bfv=False,
    extra=None,
):
    """The RequestSpec (docs/contracts.md) for a request."""
    ctx = util.ctx(req)
    _check_image_properties(image)
    requested_resources = device_profile_groups(req, flavor)
    spec = {
        'instance_uuids': list(uuids),
        'num_instances': max(len(uuids), 1),
        'min_count': min_count,
        'project_id': ctx.project_id,
        'user_id': ctx.user_id,
        'flavor': flavor_obj.spec_dict(flavor),
        'image': None
        if image is None
        else {
            'id': image['id'],
            'name': image['name'],
            'properties': dict(image['properties']),
        },
        'availability_zone': zone,
        'scheduler_hints': hints,
        'instance_group': _group(req, hints, uuids),
        'requested_resources': requested_resources,
        'device_profile': flavor['extra_specs'].get('accel:device_profile'),
        'is_bfv': is_bfv,
        'ignore_hosts': [],
        'force_hosts': [force_host] if force_host else [],
        'force_nodes': [force_node] if force_node else [],
        'retry': None,
        'request_id': ctx.request_id,
    }
    spec.update(extra or {})
    return RequestSpec.from_primitive(spec)


def root_bdm(bdms):
    """The block device mapping the server boots from (boot_index 0)."""
    for bdm in bdms or ():
        if str(bdm.get('boot_index')) == '0':
            return bdm
    return None


def is_volume_backed(root):
    """Nova's reading: a server boots from volume when its root mapping's
    destination is a volume. An image copied to local disk (``source_type:
    image, destination_type: local``, what the openstack CLI sends for
    ``--image``) is a local root disk that takes DISK_GB from the flavor."""
    if root is None:
        return False
    destination = root.get('destination_type')
    if destination is None:
        destination = (
            'local' if root.get('source_type') == 'image' else 'volume'
        )
    return destination == 'volume'


def _check_image_fits(flavor, image, is_bfv):
    if image is None:
        return
    if flavor['memory_mb'] < (image['min_ram'] or 0):
        raise util.bad_request(
            "Flavor's memory is too small for requested image."
        )
    if (
        not is_bfv
        and flavor['root_gb']
        and flavor['root_gb'] < (image['min_disk'] or 0)
    ):
        raise util.bad_request(
            "Flavor's disk is too small for requested image."
        )


def _check_key_and_groups(req, server):
    """The key pair named must be the caller's; Nimbus serves only the
    ``default`` security group (it has no networking). As Nova refuses a
    key or a group it cannot find, with a 400, so does Nimbus."""
    if server.get('key_name') is not None:
        try:
            keypair_obj.get(
                util.deps(req).api_db,
                util.ctx(req).user_id,
                server['key_name'],
            )
        except keypair_obj.KeyPairNotFound as exc:
            raise util.bad_request(
                'Invalid key_name provided: keypair %s could '
                'not be found.' % server['key_name']
            ) from exc
    for group in server.get('security_groups') or ():
        name = group.get('name')
        if name != 'default':
            raise util.bad_request('Security group %s not found.' % name)


def _check_quota(req, server, flavor, min_count, max_count):
    """How many servers to create (Nova lowers ``max_count`` to what the
    project's quotas allow, never below ``min_count``); 403 over quota."""
    deps = util.deps(req)
    project_id = util.ctx(req).project_id
    try:
        quota_usage.check_metadata(deps, project_id, server.get('metadata'))
        quota_usage.check_personality(
            deps, project_id, server.get('personality')
        )
        # Under the project's lock: the count does not see the records of
        # a create of this process that its recheck is about to remove.
        with deps.quota_locks(project_id):
            return quota_usage.allowed_instances(
                deps, util.ctx(req), project_id, flavor, min_count, max_count
            )
    except quota_usage.QuotaExceeded as exc:
        raise errors.forbidden(str(exc)) from exc
    except quota_usage.UsageUnavailable as exc:
        raise errors.HTTPError(
            503,
            'Quota usage could not be counted, no '
            'server was created: %s' % exc,
        ) from exc


def _write_and_recheck(req, instances, spec, group_uuid, flavor):
    """Store the records, then count the usage again (``[quota]
    recheck_quota``): creates racing for the last headroom all passed the
    first check, and only those still within the limits once every
    record is counted go on. One over a limit gets 403 and its records
    are removed. The project's lock serializes this within the process."""
    deps = util.deps(req)
    ctx = util.ctx(req)
    with deps.quota_locks(ctx.project_id):
        server_obj.create_build_requests(
            deps.api_db, instances, spec, group_uuid
        )
        if not deps.conf.quota.recheck_quota:
            return
        uuids = [instance['uuid'] for instance in instances]
        try:
            quota_usage.recheck_instances(
                deps, ctx, ctx.project_id, flavor, len(uuids)
            )
        except quota_usage.QuotaExceeded as exc:
            server_obj.undo_build_requests(deps.api_db, uuids)
            raise errors.forbidden(str(exc)) from exc
        except quota_usage.UsageUnavailable as exc:
            server_obj.undo_build_requests(deps.api_db, uuids)
            raise errors.HTTPError(
                503,
                'Quota usage could not be counted, no '
                'server was created: %s' % exc,
            ) from exc


def create(req, resp):
    ctx = util.ctx(req)
    util.authorize(req, policies.SERVERS % 'create')
    version = util.version(req)
    body = json_body(req, schema.create_schema(version))
    server = body['server']
    hints = normalise_hints(
        body.get('os:scheduler_hints')
        or body.get('OS-SCH-HNT:scheduler_hints')
    )
    # The handler in front (servers.create) checked the counts against the
    # limit before the schema ran; checked again here, where the list of
    # uuids is built, so no other route into this function can skip it.
    message = schema.count_error(
        server, util.deps(req).conf.api.max_instances_per_request
    )
    if message is not None:
        raise util.bad_request(message)
    min_count = int(server.get('min_count', 1) or 1)
    max_count = int(server.get('max_count', min_count) or min_count)
    if 'max_count' in server and 'min_count' not in server:
        min_count = 1 if max_count >= 1 else max_count
    flavor = lookup_flavor(req, server['flavorRef'])
    root = root_bdm(server.get('block_device_mapping_v2'))
    is_bfv = is_volume_backed(root)
    image = None
    image_ref = server.get('imageRef')
    if (
        not image_ref
        and not is_bfv
        and root is not None
        and root.get('source_type') == 'image'
    ):
        image_ref = root.get('uuid')
    if image_ref:
        image = lookup_image(req, image_ref)
    elif not is_bfv:
        raise util.bad_request(
            'Missing imageRef attribute: a server boots from an image.'
        )
    _check_image_fits(flavor, image, is_bfv)
    _check_key_and_groups(req, server)
    zone, force_host, force_node = _zone(req, server.get('availability_zone'))
    extra = {}
    if server.get('host') or server.get('hypervisor_hostname'):
        util.authorize(req, policies.SERVERS % 'create:forced_host')
        extra['requested_destination'] = {
            'host': server.get('host'),
            'node': server.get('hypervisor_hostname'),
        }
    max_count = _check_quota(req, server, flavor, min_count, max_count)
    uuids = [uuidutils.generate_uuid() for _ in range(max_count)]
    spec = request_spec_for(
        req,
        flavor,
        image,
        zone,
        hints,
        uuids,
        min_count,
        force_host,
        force_node,
        is_bfv,
        extra,
    )
    if spec.instance_group is not None:
        try:
            quota_usage.check_group_members(
                util.deps(req),
                ctx.project_id,
                len(spec.instance_group.members) - len(uuids),
                len(uuids),
            )
        except quota_usage.QuotaExceeded as exc:
            raise errors.forbidden(str(exc)) from exc
    reservation_id = 'r-' + util.generate_password(8).lower()
    now = util.isotime(util.utcnow())
    instances = []
    for index, uuid in enumerate(uuids):
        name = server['name']
        if max_count > 1:
            name = '%s-%d' % (server['name'], index + 1)
        instances.append(
            {
                'uuid': uuid,
                'display_name': name,
                'project_id': ctx.project_id,
                'user_id': ctx.user_id,
                'vm_state': states.BUILDING,
                'task_state': states.SCHEDULING,
                'power_state': 0,
                'flavor': flavor_obj.spec_dict(flavor),
                'image_ref': image['id'] if image else None,
                'availability_zone': zone,
                'metadata': server.get('metadata') or {},
                'reservation_id': reservation_id,
                'launch_index': index,
                'description': server.get('description'),
                'key_name': server.get('key_name'),
                'hostname': server.get('hostname') or name,
                'tags': server.get('tags') or [],
                'access_ip_v4': util.access_ip(
                    server.get('accessIPv4'), 'accessIPv4'
                ),
                'access_ip_v6': util.access_ip(
                    server.get('accessIPv6'), 'accessIPv6'
                ),
                'disk_config': server.get('OS-DCF:diskConfig', 'MANUAL'),
                'security_groups': [{'name': 'default'}],
                'created_at': now,
                'updated_at': None,
            }
        )
    deps = util.deps(req)
    _write_and_recheck(req, instances, spec, hints.get('group'), flavor)
    group = spec.instance_group
    if group is not None:
        scheduler_cache.server_group_changed(
            req,
            ServerGroupInfo(
                **{
                    k: getattr(group, k)
                    for k in ('uuid', 'name', 'policy', 'rules', 'members')
                }
            ),
        )
    try:
        deps.conductor_api.schedule_and_build_instances(ctx, spec, uuids)
    except Exception as exc:
        LOG.exception('Could not reach the conductor for %s', uuids)
        server_obj.undo_build_requests(deps.api_db, uuids)
        raise errors.HTTPError(
            503, 'The conductor could not be reached; no server was created.'
        ) from exc
    resp.status = 202
    return_reservation = server.get('return_reservation_id')
    if isinstance(return_reservation, str):
        return_reservation = util.boolish(
            return_reservation, 'return_reservation_id'
        )
    if return_reservation:
        resp.media = {'reservation_id': reservation_id}
        return
    # Nova's create response: no name, no status (tempest's create_server
    # schema allows only these keys).
    first = {'id': uuids[0], 'links': util.links(req, 'servers', uuids[0])}
    first.update(
        {
            'OS-DCF:diskConfig': instances[0]['disk_config'],
            'security_groups': instances[0]['security_groups'],
        }
    )
    if deps.conf.api.enable_instance_password:
        first['adminPass'] = (
            server.get('adminPass') or util.generate_password()
        )
    resp.set_header('Location', first['links'][0]['href'])
    resp.media = {'server': first}
