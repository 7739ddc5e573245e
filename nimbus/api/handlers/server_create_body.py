"""The body of POST /servers, read: what its references name (a flavor, an
image, an availability zone, a key pair, security groups), its scheduler
hints, its block device mappings and its counts, each checked against
what exists; a 400 for what does not. The scheduler dry run and the
capacity query read their flavor, image, hints and zone the same way.
"""

import json

from nimbus.api import policies
from nimbus.api import util
from nimbus.api.objects import aggregates as agg_obj
from nimbus.api.objects import flavor_access
from nimbus.api.objects import flavors as flavor_obj
from nimbus.api.objects import images as image_obj
from nimbus.api.objects import keypairs as keypair_obj
from nimbus.api.schemas import servers as schema


def _ref_id(ref):
    """``flavorRef``/``imageRef`` may be an id or a URL ending in one."""
    ref = str(ref).strip()
    return ref.rstrip('/').rsplit('/', 1)[-1] if '/' in ref else ref


def _found(req, get, not_found, kind, ref_id):
    """``get(api_db, ref_id)``; a 400 naming ``kind`` when it raises
    ``not_found``."""
    try:
        return get(util.deps(req).api_db, ref_id)
    except not_found as exc:
        raise util.bad_request(
            '%s %s could not be found.' % (kind, ref_id)
        ) from exc


def lookup_flavor(req, ref):
    flavor_id = _ref_id(ref)
    flavor = _found(
        req, flavor_obj.get, flavor_obj.FlavorNotFound, 'Flavor', flavor_id
    )
    if flavor['disabled']:
        raise util.bad_request('Flavor %s is disabled.' % flavor_id)
    if not flavor_access.visible(flavor, util.ctx(req)):
        # A private flavor is its granted projects' and the admins'; to
        # anyone else it does not exist (Nova's 400).
        raise util.bad_request('Flavor %s could not be found.' % flavor_id)
    return flavor


def lookup_image(req, ref):
    image_id = _ref_id(ref)
    image = _found(
        req, image_obj.get, image_obj.ImageNotFound, 'Image', image_id
    )
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


def zone_of(req, requested):
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


def counts(req, server):
    """``(min_count, max_count)`` asked for; a 400 past the API's
    ``max_instances_per_request``."""
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
    return min_count, max_count


def boot_image(req, server):
    """``(image, is_bfv)``: the image the server boots from (None for a
    volume) and whether its root disk is a volume."""
    root = root_bdm(server.get('block_device_mapping_v2'))
    is_bfv = is_volume_backed(root)
    image_ref = server.get('imageRef')
    if (
        not image_ref
        and not is_bfv
        and root is not None
        and root.get('source_type') == 'image'
    ):
        image_ref = root.get('uuid')
    if image_ref:
        return lookup_image(req, image_ref), is_bfv
    if not is_bfv:
        raise util.bad_request(
            'Missing imageRef attribute: a server boots from an image.'
        )
    return None, is_bfv


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


def check_image_fits(flavor, image, is_bfv):
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


def check_key_and_groups(req, server):
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
