"""Default policy rules of key pairs and flavor access (Nova's names),
part of :data:`nimbus.api.policies.RULES`."""

from nimbus.common import policy as common_policy

KEYPAIRS = 'os_compute_api:os-keypairs:%s'
FLAVOR_ACCESS = 'os_compute_api:os-flavor-access'
FLAVOR_ACCESS_ACTION = 'os_compute_api:os-flavor-access:%s'

# A key pair belongs to a user: its owner or an admin (2.10's user_id).
_OWNER = 'rule:admin_api or user_id:%(user_id)s'


def _rule(name, check, description, operations):
    # These rules carry no scope_types.
    return common_policy.documented(name, check, description, operations)


RULES = [
    _rule(
        KEYPAIRS % 'index',
        _OWNER,
        "List a user's key pairs.",
        [('GET', '/os-keypairs')],
    ),
    _rule(
        KEYPAIRS % 'create',
        _OWNER,
        'Create or import a key pair.',
        [('POST', '/os-keypairs')],
    ),
    _rule(
        KEYPAIRS % 'show',
        _OWNER,
        'Show a key pair.',
        [('GET', '/os-keypairs/{keypair_name}')],
    ),
    _rule(
        KEYPAIRS % 'delete',
        _OWNER,
        'Delete a key pair.',
        [('DELETE', '/os-keypairs/{keypair_name}')],
    ),
    _rule(
        FLAVOR_ACCESS,
        'rule:admin_api',
        'List the projects granted a private flavor.',
        [('GET', '/flavors/{flavor_id}/os-flavor-access')],
    ),
    _rule(
        FLAVOR_ACCESS_ACTION % 'add_tenant_access',
        'rule:admin_api',
        'Grant a project a private flavor.',
        [('POST', '/flavors/{flavor_id}/action (addTenantAccess)')],
    ),
    _rule(
        FLAVOR_ACCESS_ACTION % 'remove_tenant_access',
        'rule:admin_api',
        "Revoke a project's access to a private flavor.",
        [('POST', '/flavors/{flavor_id}/action (removeTenantAccess)')],
    ),
]
