"""Default policy rules of flavors and their extra specs (flavor access is
in :mod:`nimbus.api.policies_access`)."""

from nimbus.api.policies_base import ADMIN
from nimbus.api.policies_base import ANY
from nimbus.api.policies_base import rule

FLAVORS = 'os_compute_api:os-flavor-manage:%s'
EXTRA_SPECS = 'os_compute_api:os-flavor-extra-specs:%s'

RULES = [
    rule(
        FLAVORS % 'create', ADMIN, 'Create a flavor.', [('POST', '/flavors')]
    ),
    rule(
        FLAVORS % 'update',
        ADMIN,
        'Update a flavor.',
        [('PUT', '/flavors/{flavor_id}')],
    ),
    rule(
        FLAVORS % 'delete',
        ADMIN,
        'Delete a flavor.',
        [('DELETE', '/flavors/{flavor_id}')],
    ),
    rule(
        EXTRA_SPECS % 'index',
        ANY,
        'List flavor extra specs.',
        [('GET', '/flavors/{flavor_id}/os-extra_specs')],
    ),
    rule(
        EXTRA_SPECS % 'show',
        ANY,
        'Show a flavor extra spec.',
        [('GET', '/flavors/{flavor_id}/os-extra_specs/{key}')],
    ),
    rule(
        EXTRA_SPECS % 'create',
        ADMIN,
        'Set extra specs.',
        [('POST', '/flavors/{flavor_id}/os-extra_specs')],
    ),
    rule(
        EXTRA_SPECS % 'update',
        ADMIN,
        'Update an extra spec.',
        [('PUT', '/flavors/{flavor_id}/os-extra_specs/{key}')],
    ),
    rule(
        EXTRA_SPECS % 'delete',
        ADMIN,
        'Delete an extra spec.',
        [('DELETE', '/flavors/{flavor_id}/os-extra_specs/{key}')],
    ),
]
