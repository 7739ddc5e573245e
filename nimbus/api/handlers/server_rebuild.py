"""The ``rebuild`` server action: a new root disk from an image, on the
server's own host.

As in Nova: the image must be one the caller may boot (400 otherwise); a
new image is re-checked against the host, with ImagePropertiesFilter's
logic (architecture, hypervisor type, VM mode and version against the
compute node's ``supported_instances``) and the image's required and
forbidden traits against the host's resource provider in placement, and a
host that no longer fits refuses the rebuild with a 400. The name,
metadata, access addresses, ``preserve_ephemeral``, the description
(2.19), the key pair (2.54, null unsets it), the user data (2.57) and the
hostname (2.90) are taken; personality files are accepted up to 2.56 (the
fake driver has no files to put them in). The answer (202) is the server
as Nova shows it: a trimmed view before 2.75, the full one from 2.75 (with
the pinned availability zone from 2.96), with ``key_name`` from 2.54 and ``user_data`` from 2.57.
"""

from oslo_log import log as logging

from nimbus.api import policies_server_actions as policies
from nimbus.api import util
from nimbus.api.handlers import action_steps
from nimbus.api.handlers import server_create_body
from nimbus.api.handlers import server_views
from nimbus.api.handlers import servers
from nimbus.api.objects import keypairs as keypair_obj
from nimbus.api.objects import server_actions as action_obj
from nimbus.api.objects import server_groups as group_obj
from nimbus.common import instance_states as states
from nimbus.common.wsgi import errors
from nimbus.extra_specs import image_fit

LOG = logging.getLogger(__name__)

# body key -> the record key it changes.
_FIELDS = {
    'name': 'display_name',
    'metadata': 'metadata',
    'description': 'description',
    'key_name': 'key_name',
    'user_data': 'user_data',
    'hostname': 'hostname',
    'OS-DCF:diskConfig': 'disk_config',
}


def _check_key(req, key_name):
    if key_name is None:
        return
    try:
        keypair_obj.get(util.deps(req).api_db, util.ctx(req).user_id, key_name)
    except keypair_obj.KeyPairNotFound as exc:
        raise util.bad_request(
            'Invalid key_name provided: keypair %s could not be found.'
            % key_name
        ) from exc


def _provider_traits(req, provider_uuid):
    placement = util.deps(req).placement
    if placement is None or not provider_uuid:
        return None
    try:
        return set(placement.provider_traits(util.ctx(req), provider_uuid))
    except Exception as exc:
        LOG.warning('Could not read the traits of %s: %s', provider_uuid, exc)
        raise errors.HTTPError(
            503,
            "Placement could not tell the traits of the server's host; "
            'try again.',
        ) from exc


def check_host_fits(req, record, image):
    """400 when the server's host does not fit ``image`` (Nova's rebuild
    re-check of a new image)."""
    props = image.get('properties') or {}
    want = image_fit.wanted(props)
    if image_fit.asks_anything(want):
        node = action_obj.host_node(
            util.deps(req).cells,
            record['cell'],
            record['host'],
            record.get('node'),
        )
        if node is None or not image_fit.fits(
            want, node.get('supported_instances'), node['hypervisor_version']
        ):
            reason = (
                'its compute node is unknown'
                if node is None
                else image_fit.reject_reason(
                    want,
                    node.get('supported_instances'),
                    node['hypervisor_version'],
                )
            )
            raise util.bad_request(
                'Image %s is unacceptable: the host %s of the server does '
                'not fit it (%s).' % (image['id'], record['host'], reason)
            )
    required, forbidden = image_fit.traits(props)
    if not (required or forbidden):
        return
    traits = _provider_traits(req, record.get('compute_node_uuid'))
    if traits is None:
        return
    missing = sorted(required - traits)
    present = sorted(forbidden & traits)
    if missing or present:
        raise util.bad_request(
            'Image %s is unacceptable: the host %s of the server %s.'
            % (
                image['id'],
                record['host'],
                '; '.join(
                    part
                    for part in (
                        missing
                        and 'lacks its required traits %s'
                        % ', '.join(missing),
                        present
                        and 'has its forbidden traits %s' % ', '.join(present),
                    )
                    if part
                ),
            )
        )


def _attributes(req, value):
    attributes = {}
    for key, field in _FIELDS.items():
        if key in value:
            attributes[field] = value[key]
    for key, field in (
        ('accessIPv4', 'access_ip_v4'),
        ('accessIPv6', 'access_ip_v6'),
    ):
        if key in value:
            attributes[field] = util.access_ip(value[key], key)
    return attributes


def rebuild(req, resp, server_id, value):
    record = action_steps.server_for(req, server_id, policies.REBUILD)
    action_steps.check_lock(req, record)
    action_steps.check_placed(record, 'rebuild')
    image = server_create_body.lookup_image(req, value['imageRef'])
    if image['id'] != record.get('image_ref'):
        check_host_fits(req, record, image)
    if 'key_name' in value:
        _check_key(req, value['key_name'])
    attributes = _attributes(req, value)
    power_on = record['vm_state'] != states.STOPPED
    preserve = bool(value.get('preserve_ephemeral', False))
    password = value.get('adminPass') or util.generate_password()
    shown = action_steps.begin_and_cast(
        req,
        record,
        'rebuild',
        'rebuild',
        'rebuild',
        lambda api, ctx, host, uuid, rid: api.rebuild_instance(
            ctx, host, uuid, rid, image['id'], preserve, power_on
        ),
        then=action_obj.rebuilt(record['uuid'], image['id'], attributes),
        before_cast=lambda: _view(req, server_id, password),
    )
    resp.status = 202
    resp.media = {'server': shown}


def _view(req, server_id, password):
    record = servers.get_authorized(req, server_id, policies.REBUILD)
    version = util.version(req)
    body = server_views.detail(req, record)
    if version < (2, 75):
        body = {
            key: value
            for key, value in body.items()
            if key not in servers.NOT_IN_UPDATE
            and not key.startswith(servers.NOT_IN_UPDATE_PREFIXES)
        }
    if version >= (2, 71):
        body['server_groups'] = group_obj.of_instance(
            util.deps(req).api_db, record['uuid']
        )
    if (2, 54) <= version < (2, 75):
        # The trimmed view shows the key pair from 2.54 (the full one has
        # it anyway).
        body['key_name'] = record.get('key_name')
    if version >= (2, 57):
        # The user data under its own name (2.57), never under the
        # extended attribute's even in the full view of 2.75.
        body.pop('OS-EXT-SRV-ATTR:user_data', None)
        body['user_data'] = record.get('user_data')
    body['adminPass'] = password
    return body
