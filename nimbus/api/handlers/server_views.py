"""How a server record is shown, per microversion."""

import hashlib

from nimbus.api import policies
from nimbus.api import util
from nimbus.common import instance_states as states


def basic(req, record):
    return {
        'id': record['uuid'],
        'name': record.get('display_name'),
        'links': util.links(req, 'servers', record['uuid']),
    }


def _flavor(req, flavor, show_specs):
    if util.version(req) < (2, 47):
        flavorid = flavor.get('flavorid', '')
        return {
            'id': flavorid,
            'links': [
                {
                    'rel': 'bookmark',
                    'href': '%s/flavors/%s' % (util.base_url(req), flavorid),
                }
            ],
        }
    body = {
        'vcpus': flavor.get('vcpus'),
        'ram': flavor.get('memory_mb'),
        'disk': flavor.get('root_gb'),
        'ephemeral': flavor.get('ephemeral_gb', 0),
        'swap': flavor.get('swap', 0),
        'original_name': flavor.get('name'),
    }
    if show_specs:
        body['extra_specs'] = flavor.get('extra_specs') or {}
    return body


def _image(req, image_ref):
    if not image_ref:
        return ''
    return {
        'id': image_ref,
        'links': [
            {
                'rel': 'bookmark',
                'href': '%s/images/%s' % (util.base_url(req), image_ref),
            }
        ],
    }


def _host_id(record):
    if not record.get('host'):
        return ''
    return hashlib.sha224(
        (str(record['project_id']) + record['host']).encode()
    ).hexdigest()


def fault(record, is_admin_view):
    """The ``fault`` of an ERROR (or deleted) server. As in Nova, a 500
    fault's ``details`` (which hosts were tried, why each was rejected)
    are shown only to admins; any other code shows them to everyone who
    can see the server."""
    value = record.get('fault')
    if not value or record['vm_state'] not in (states.ERROR, states.DELETED):
        return None
    body = {
        'code': value['code'],
        'message': value['message'],
        'created': util.isotime(value['created']),
    }
    if is_admin_view or value['code'] != 500:
        body['details'] = value.get('details') or ''
    return body


def detail(req, record, is_admin_view=None):
    version = util.version(req)
    if is_admin_view is None:
        is_admin_view = util.can(
            req, policies.EXT_ATTRS, {'project_id': record['project_id']}
        )
    status = states.api_status(record['vm_state'], record.get('task_state'))
    body = basic(req, record)
    body.update(
        {
            'status': status,
            'tenant_id': record['project_id'],
            'user_id': record.get('user_id'),
            'metadata': record.get('metadata') or {},
            'hostId': _host_id(record),
            'image': _image(req, record.get('image_ref')),
            'flavor': _flavor(
                req,
                record.get('flavor') or {},
                util.can(req, policies.EXTRA_SPECS % 'index'),
            ),
            'created': util.isotime(record.get('created_at')),
            'updated': util.isotime(
                record.get('updated_at') or record.get('created_at')
            ),
            'addresses': {},
            'accessIPv4': record.get('access_ip_v4') or '',
            'accessIPv6': record.get('access_ip_v6') or '',
            'progress': 100 if status == 'ACTIVE' else 0,
            'OS-DCF:diskConfig': record.get('disk_config') or 'MANUAL',
            'OS-EXT-AZ:availability_zone': record.get('availability_zone')
            or '',
            'config_drive': '',
            'key_name': record.get('key_name'),
            'OS-SRV-USG:launched_at': util.isotime(record.get('launched_at')),
            'OS-SRV-USG:terminated_at': util.isotime(
                record.get('terminated_at')
            ),
            'OS-EXT-STS:task_state': record.get('task_state'),
            'OS-EXT-STS:vm_state': record['vm_state'],
            'OS-EXT-STS:power_state': record.get('power_state') or 0,
            'os-extended-volumes:volumes_attached': [],
            'security_groups': record.get('security_groups')
            or [{'name': 'default'}],
        }
    )
    if is_admin_view:
        body.update(
            {
                'OS-EXT-SRV-ATTR:host': record.get('host'),
                'OS-EXT-SRV-ATTR:hypervisor_hostname': record.get('node'),
                'OS-EXT-SRV-ATTR:instance_name': 'instance-%s'
                % record['uuid'],
            }
        )
        if version >= (2, 3):
            body.update(
                {
                    'OS-EXT-SRV-ATTR:reservation_id': record.get(
                        'reservation_id'
                    ),
                    'OS-EXT-SRV-ATTR:launch_index': record.get(
                        'launch_index', 0
                    ),
                    'OS-EXT-SRV-ATTR:hostname': record.get('hostname'),
                    'OS-EXT-SRV-ATTR:kernel_id': '',
                    'OS-EXT-SRV-ATTR:ramdisk_id': '',
                    'OS-EXT-SRV-ATTR:root_device_name': None,
                    'OS-EXT-SRV-ATTR:user_data': record.get('user_data'),
                }
            )
    if version >= (2, 9):
        body['locked'] = bool(record.get('locked_by'))
    if version >= (2, 16) and is_admin_view:
        body['host_status'] = 'UP' if record.get('host') else ''
    if version >= (2, 19):
        body['description'] = record.get('description')
    if version >= (2, 26):
        body['tags'] = record.get('tags') or []
    if version >= (2, 63):
        body['trusted_image_certificates'] = None
    if version >= (2, 73):
        body['locked_reason'] = record.get('locked_reason')
    if version >= (2, 96):
        body['pinned_availability_zone'] = record.get(
            'pinned_availability_zone'
        )
    value = fault(record, is_admin_view)
    if value is not None:
        body['fault'] = value
    return body
