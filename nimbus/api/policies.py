"""Default oslo.policy rules of the compute API.

Rule names follow Nova's (``os_compute_api:...``) so operators can reuse
their policy files; Nimbus-only endpoints use ``nimbus:...``. Override any of
them in ``[oslo_policy] policy_file``.

The defaults are Nova's personas, for project-scoped tokens
(``scope_types = ['project']``): ``role:admin`` for the cloud, a project's
``member`` for writes and its ``reader`` for reads of what the project
owns. With ``[oslo_policy] enforce_new_defaults = False`` each persona rule
also accepts its deprecated form (oslo.policy ORs them): the owning
project whatever its roles, or an admin. With ``enforce_scope``
(oslo.policy's default) a system-scoped token is refused on every route.
Keystone's implied roles (admin implies member, member implies reader)
are in a token's roles; noauth2 applies them too.
"""

from oslo_log import versionutils
from oslo_policy import policy

from nimbus.api import policies_access

ADMIN = 'rule:context_is_admin'
PROJECT_MEMBER = 'rule:project_member_api'
PROJECT_READER = 'rule:project_reader_api'
OWNER_OR_ADMIN = 'rule:project_member_or_admin'
READER_OR_ADMIN = 'rule:project_reader_or_admin'
SERVICE_OR_ADMIN = 'rule:service_or_admin'
ANY = '@'
PROJECT = ['project']

_LEGACY_OWNER = policy.DeprecatedRule(
    name='rule:admin_or_owner',
    check_str='is_admin:True or project_id:%(project_id)s',
    deprecated_reason=(
        'The compute API gained project reader and member personas; the '
        'owner-or-admin defaults are kept for enforce_new_defaults = False.'
    ),
    deprecated_since=versionutils.deprecated.WALLABY,
)

BASE = [
    policy.RuleDefault('context_is_admin', 'role:admin', 'Administrators.'),
    # Kept under its old name for policy files that refer to it.
    policy.RuleDefault(
        'admin_api', 'rule:context_is_admin', 'Administrators.'
    ),
    policy.RuleDefault(
        'admin_or_owner',
        'is_admin:True or project_id:%(project_id)s',
        'Administrators or the owning project, whatever its roles (the '
        'legacy default).',
    ),
    policy.RuleDefault(
        'project_member_api',
        'role:member and project_id:%(project_id)s',
        'A member of the owning project.',
    ),
    policy.RuleDefault(
        'project_reader_api',
        'role:reader and project_id:%(project_id)s',
        'A reader of the owning project.',
    ),
    policy.RuleDefault(
        'project_member_or_admin',
        'rule:project_member_api or rule:context_is_admin',
        'A member of the owning project, or an administrator.',
        deprecated_rule=_LEGACY_OWNER,
    ),
    policy.RuleDefault(
        'project_reader_or_admin',
        'rule:project_reader_api or rule:context_is_admin',
        'A reader of the owning project, or an administrator.',
        deprecated_rule=_LEGACY_OWNER,
    ),
    policy.RuleDefault(
        'service_or_admin',
        'role:admin or role:service',
        'Services (role service) or administrators.',
    ),
]


def _rule(name, check, description, operations):
    return policy.DocumentedRuleDefault(
        name=name,
        check_str=check,
        description=description,
        operations=[{'method': m, 'path': p} for m, p in operations],
        scope_types=PROJECT,
    )


SERVERS = 'os_compute_api:servers:%s'
FLAVORS = 'os_compute_api:os-flavor-manage:%s'
EXTRA_SPECS = 'os_compute_api:os-flavor-extra-specs:%s'
SERVICES = 'os_compute_api:os-services:%s'
HYPERVISORS = 'os_compute_api:os-hypervisors:%s'
AGGREGATES = 'os_compute_api:os-aggregates:%s'
AZ = 'os_compute_api:os-availability-zone:%s'
GROUPS = 'os_compute_api:os-server-groups:%s'
EVENTS = 'os_compute_api:os-server-external-events:create'
EXT_ATTRS = 'os_compute_api:os-extended-server-attributes'
ALL_TENANTS = 'os_compute_api:servers:index:get_all_tenants'
IMAGES = 'nimbus:images:%s'
DRY_RUN = 'nimbus:scheduler:dry_run'
RECORDS = 'nimbus:scheduler:records'
CELLS = 'nimbus:cells:index'
CAPACITY = 'nimbus:scheduler:capacity'
DASHBOARD = 'nimbus:dashboard'
QUOTAS = 'os_compute_api:os-quota-sets:%s'
QUOTA_CLASSES = 'os_compute_api:os-quota-class-sets:%s'
LIMITS = 'os_compute_api:limits'
LIMITS_OTHER_PROJECT = 'os_compute_api:limits:other_project'
USAGE = 'os_compute_api:os-simple-tenant-usage:%s'
HOSTS = 'os_compute_api:os-hosts:%s'
AUDIT_LOG = 'os_compute_api:os-instance-usage-audit-log:%s'

RULES = BASE + [
    _rule(
        SERVERS % 'index',
        READER_OR_ADMIN,
        'List servers.',
        [('GET', '/servers')],
    ),
    _rule(
        SERVERS % 'detail',
        READER_OR_ADMIN,
        'List servers with details.',
        [('GET', '/servers/detail')],
    ),
    _rule(
        ALL_TENANTS,
        ADMIN,
        'List servers of every project.',
        [('GET', '/servers?all_tenants=1')],
    ),
    _rule(
        SERVERS % 'show',
        READER_OR_ADMIN,
        'Show a server.',
        [('GET', '/servers/{server_id}')],
    ),
    _rule(
        SERVERS % 'create',
        OWNER_OR_ADMIN,
        'Create servers.',
        [('POST', '/servers')],
    ),
    _rule(
        SERVERS % 'create:forced_host',
        ADMIN,
        'Create a server on a named host (availability_zone "az:host").',
        [('POST', '/servers')],
    ),
    _rule(
        SERVERS % 'update',
        OWNER_OR_ADMIN,
        'Update a server (name, access addresses, description, hostname).',
        [('PUT', '/servers/{server_id}')],
    ),
    _rule(
        SERVERS % 'delete',
        OWNER_OR_ADMIN,
        'Delete a server.',
        [('DELETE', '/servers/{server_id}')],
    ),
    _rule(
        EXT_ATTRS,
        ADMIN,
        'See OS-EXT-SRV-ATTR host fields.',
        [('GET', '/servers/{server_id}')],
    ),
    _rule(
        FLAVORS % 'create', ADMIN, 'Create a flavor.', [('POST', '/flavors')]
    ),
    _rule(
        FLAVORS % 'update',
        ADMIN,
        'Update a flavor.',
        [('PUT', '/flavors/{flavor_id}')],
    ),
    _rule(
        FLAVORS % 'delete',
        ADMIN,
        'Delete a flavor.',
        [('DELETE', '/flavors/{flavor_id}')],
    ),
    _rule(
        EXTRA_SPECS % 'index',
        ANY,
        'List flavor extra specs.',
        [('GET', '/flavors/{flavor_id}/os-extra_specs')],
    ),
    _rule(
        EXTRA_SPECS % 'show',
        ANY,
        'Show a flavor extra spec.',
        [('GET', '/flavors/{flavor_id}/os-extra_specs/{key}')],
    ),
    _rule(
        EXTRA_SPECS % 'create',
        ADMIN,
        'Set extra specs.',
        [('POST', '/flavors/{flavor_id}/os-extra_specs')],
    ),
    _rule(
        EXTRA_SPECS % 'update',
        ADMIN,
        'Update an extra spec.',
        [('PUT', '/flavors/{flavor_id}/os-extra_specs/{key}')],
    ),
    _rule(
        EXTRA_SPECS % 'delete',
        ADMIN,
        'Delete an extra spec.',
        [('DELETE', '/flavors/{flavor_id}/os-extra_specs/{key}')],
    ),
    _rule(
        SERVICES % 'list', ADMIN, 'List services.', [('GET', '/os-services')]
    ),
    _rule(
        SERVICES % 'update',
        ADMIN,
        'Enable, disable or force down a service.',
        [('PUT', '/os-services/{service_id}')],
    ),
    _rule(
        SERVICES % 'delete',
        ADMIN,
        'Delete a service.',
        [('DELETE', '/os-services/{service_id}')],
    ),
    _rule(
        HYPERVISORS % 'list',
        ADMIN,
        'List hypervisors.',
        [('GET', '/os-hypervisors')],
    ),
    _rule(
        HYPERVISORS % 'list-detail',
        ADMIN,
        'List hypervisors with details.',
        [('GET', '/os-hypervisors/detail')],
    ),
    _rule(
        HYPERVISORS % 'show',
        ADMIN,
        'Show a hypervisor.',
        [('GET', '/os-hypervisors/{hypervisor_id}')],
    ),
    _rule(
        AGGREGATES % 'index',
        ADMIN,
        'List aggregates.',
        [('GET', '/os-aggregates')],
    ),
    _rule(
        AGGREGATES % 'show',
        ADMIN,
        'Show an aggregate.',
        [('GET', '/os-aggregates/{aggregate_id}')],
    ),
    _rule(
        AGGREGATES % 'create',
        ADMIN,
        'Create an aggregate.',
        [('POST', '/os-aggregates')],
    ),
    _rule(
        AGGREGATES % 'update',
        ADMIN,
        'Update an aggregate.',
        [('PUT', '/os-aggregates/{aggregate_id}')],
    ),
    _rule(
        AGGREGATES % 'delete',
        ADMIN,
        'Delete an aggregate.',
        [('DELETE', '/os-aggregates/{aggregate_id}')],
    ),
    _rule(
        AGGREGATES % 'add_host',
        ADMIN,
        'Add a host.',
        [('POST', '/os-aggregates/{aggregate_id}/action')],
    ),
    _rule(
        AGGREGATES % 'remove_host',
        ADMIN,
        'Remove a host.',
        [('POST', '/os-aggregates/{aggregate_id}/action')],
    ),
    _rule(
        AGGREGATES % 'set_metadata',
        ADMIN,
        'Set metadata.',
        [('POST', '/os-aggregates/{aggregate_id}/action')],
    ),
    _rule(
        AZ % 'list',
        ANY,
        'List availability zones.',
        [('GET', '/os-availability-zone')],
    ),
    _rule(
        AZ % 'detail',
        ADMIN,
        'List availability zones with their hosts.',
        [('GET', '/os-availability-zone/detail')],
    ),
    _rule(
        GROUPS % 'index',
        READER_OR_ADMIN,
        'List server groups.',
        [('GET', '/os-server-groups')],
    ),
    _rule(
        GROUPS % 'index:all_projects',
        ADMIN,
        'List server groups of every project.',
        [('GET', '/os-server-groups')],
    ),
    _rule(
        GROUPS % 'show',
        READER_OR_ADMIN,
        'Show a server group.',
        [('GET', '/os-server-groups/{server_group_id}')],
    ),
    _rule(
        GROUPS % 'create',
        OWNER_OR_ADMIN,
        'Create a server group.',
        [('POST', '/os-server-groups')],
    ),
    _rule(
        GROUPS % 'delete',
        OWNER_OR_ADMIN,
        'Delete a server group.',
        [('DELETE', '/os-server-groups/{server_group_id}')],
    ),
    _rule(
        EVENTS,
        SERVICE_OR_ADMIN,
        'Deliver external events.',
        [('POST', '/os-server-external-events')],
    ),
    _rule(
        IMAGES % 'get',
        ANY,
        'List or show images.',
        [('GET', '/v2/images'), ('GET', '/v2/images/{image_id}')],
    ),
    _rule(
        IMAGES % 'create',
        OWNER_OR_ADMIN,
        'Create an image.',
        [('POST', '/v2/images')],
    ),
    _rule(
        IMAGES % 'modify',
        OWNER_OR_ADMIN,
        "Change an image's properties.",
        [('PUT', '/v2/images/{image_id}'), ('PATCH', '/v2/images/{image_id}')],
    ),
    _rule(
        IMAGES % 'delete',
        OWNER_OR_ADMIN,
        'Delete an image.',
        [('DELETE', '/v2/images/{image_id}')],
    ),
    _rule(
        DRY_RUN,
        ADMIN,
        'Ask the scheduler where a server would go, without claiming.',
        [('POST', '/os-scheduler/dry-run')],
    ),
    _rule(
        RECORDS,
        ADMIN,
        "Read the scheduler's decision records.",
        [('GET', '/os-scheduler/records')],
    ),
    _rule(
        CELLS,
        ADMIN,
        'List the cells with their numbers of hosts and servers.',
        [('GET', '/os-cells')],
    ),
    _rule(
        CAPACITY,
        ADMIN,
        'Ask how many more of a flavor fit and where, without claiming.',
        [('GET', '/os-scheduler/capacity')],
    ),
    _rule(
        DASHBOARD,
        ADMIN,
        "Read the dashboard's data: hosts, "
        'failed builds, capacity and the decision stream (the page and '
        'its scripts are public; they hold no data).',
        [
            ('GET', '/dashboard/api/hosts'),
            ('GET', '/dashboard/api/failures'),
            ('GET', '/dashboard/api/capacity'),
            ('GET', '/dashboard/api/decisions'),
            ('GET', '/dashboard/api/events'),
        ],
    ),
]

# Quotas, limits and usage (Nova's defaults: a project reads its own,
# administrators change them and read everyone's).
RULES += [
    _rule(
        QUOTAS % 'show',
        READER_OR_ADMIN,
        "Show a project's quota limits.",
        [('GET', '/os-quota-sets/{tenant_id}')],
    ),
    _rule(
        QUOTAS % 'detail',
        READER_OR_ADMIN,
        "Show a project's quota limits with their usage.",
        [('GET', '/os-quota-sets/{tenant_id}/detail')],
    ),
    _rule(
        QUOTAS % 'defaults',
        ANY,
        'Show the default quota limits.',
        [('GET', '/os-quota-sets/{tenant_id}/defaults')],
    ),
    _rule(
        QUOTAS % 'update',
        ADMIN,
        "Set a project's quota limits.",
        [('PUT', '/os-quota-sets/{tenant_id}')],
    ),
    _rule(
        QUOTAS % 'delete',
        ADMIN,
        "Revert a project's quota limits to the defaults.",
        [('DELETE', '/os-quota-sets/{tenant_id}')],
    ),
    _rule(
        QUOTA_CLASSES % 'show',
        ADMIN,
        'Show a quota class.',
        [('GET', '/os-quota-class-sets/{id}')],
    ),
    _rule(
        QUOTA_CLASSES % 'update',
        ADMIN,
        'Update a quota class.',
        [('PUT', '/os-quota-class-sets/{id}')],
    ),
    _rule(
        LIMITS,
        ANY,
        "Show one's own project's absolute limits.",
        [('GET', '/limits')],
    ),
    _rule(
        LIMITS_OTHER_PROJECT,
        ADMIN,
        'Show the limits of another project (tenant_id).',
        [('GET', '/limits')],
    ),
    _rule(
        USAGE % 'show',
        READER_OR_ADMIN,
        "Show a project's usage.",
        [('GET', '/os-simple-tenant-usage/{tenant_id}')],
    ),
    _rule(
        USAGE % 'list',
        ADMIN,
        'List the usage of every project.',
        [('GET', '/os-simple-tenant-usage')],
    ),
    _rule(
        HOSTS % 'list',
        ADMIN,
        'List hosts (below 2.43).',
        [('GET', '/os-hosts')],
    ),
    _rule(
        HOSTS % 'show',
        ADMIN,
        'Show a host (below 2.43).',
        [('GET', '/os-hosts/{host_name}')],
    ),
    _rule(
        HYPERVISORS % 'search',
        ADMIN,
        'Search hypervisors by name (below 2.53).',
        [('GET', '/os-hypervisors/{hypervisor_hostname_pattern}/search')],
    ),
    _rule(
        HYPERVISORS % 'servers',
        ADMIN,
        'List the servers of hypervisors (below 2.53).',
        [('GET', '/os-hypervisors/{hypervisor_hostname_pattern}/servers')],
    ),
    _rule(
        AUDIT_LOG % 'list',
        ADMIN,
        'List instance usage audit logs.',
        [('GET', '/os-instance_usage_audit_log')],
    ),
    _rule(
        AUDIT_LOG % 'show',
        ADMIN,
        'Show an instance usage audit log.',
        [('GET', '/os-instance_usage_audit_log/{before_timestamp}')],
    ),
]
RULES += policies_access.RULES


def list_rules():
    """For oslopolicy-sample-generator."""
    return RULES
