"""Default oslo.policy rules of the compute API.

Rule names follow Nova's (``os_compute_api:...``) so operators can reuse
their policy files; Nimbus-only endpoints use ``nimbus:...``. Override any of
them in ``[oslo_policy] policy_file``.
"""

from oslo_policy import policy

from nimbus.api import policies_access

ADMIN = 'role:admin'
OWNER_OR_ADMIN = 'rule:admin_api or project_id:%(project_id)s'
SERVICE_OR_ADMIN = 'rule:admin_api or role:service'
ANY = '@'


def _rule(name, check, description, operations):
    return policy.DocumentedRuleDefault(
        name=name,
        check_str=check,
        description=description,
        operations=[{'method': m, 'path': p} for m, p in operations],
    )


BASE = [
    policy.RuleDefault('admin_api', ADMIN, 'Administrators.'),
    policy.RuleDefault(
        'admin_or_owner',
        OWNER_OR_ADMIN,
        'Administrators or members of the owning project.',
    ),
    policy.RuleDefault(
        'service_or_admin',
        SERVICE_OR_ADMIN,
        'Services (role service) or administrators.',
    ),
]

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
        'rule:admin_or_owner',
        'List servers.',
        [('GET', '/servers')],
    ),
    _rule(
        SERVERS % 'detail',
        'rule:admin_or_owner',
        'List servers with details.',
        [('GET', '/servers/detail')],
    ),
    _rule(
        ALL_TENANTS,
        'rule:admin_api',
        'List servers of every project.',
        [('GET', '/servers?all_tenants=1')],
    ),
    _rule(
        SERVERS % 'show',
        'rule:admin_or_owner',
        'Show a server.',
        [('GET', '/servers/{server_id}')],
    ),
    _rule(
        SERVERS % 'create',
        'rule:admin_or_owner',
        'Create servers.',
        [('POST', '/servers')],
    ),
    _rule(
        SERVERS % 'create:forced_host',
        'rule:admin_api',
        'Create a server on a named host (availability_zone "az:host").',
        [('POST', '/servers')],
    ),
    _rule(
        SERVERS % 'update',
        'rule:admin_or_owner',
        'Update a server (name, access addresses, description, hostname).',
        [('PUT', '/servers/{server_id}')],
    ),
    _rule(
        SERVERS % 'delete',
        'rule:admin_or_owner',
        'Delete a server.',
        [('DELETE', '/servers/{server_id}')],
    ),
    _rule(
        EXT_ATTRS,
        'rule:admin_api',
        'See OS-EXT-SRV-ATTR host fields.',
        [('GET', '/servers/{server_id}')],
    ),
    _rule(
        FLAVORS % 'create',
        'rule:admin_api',
        'Create a flavor.',
        [('POST', '/flavors')],
    ),
    _rule(
        FLAVORS % 'update',
        'rule:admin_api',
        'Update a flavor.',
        [('PUT', '/flavors/{flavor_id}')],
    ),
    _rule(
        FLAVORS % 'delete',
        'rule:admin_api',
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
        'rule:admin_api',
        'Set extra specs.',
        [('POST', '/flavors/{flavor_id}/os-extra_specs')],
    ),
    _rule(
        EXTRA_SPECS % 'update',
        'rule:admin_api',
        'Update an extra spec.',
        [('PUT', '/flavors/{flavor_id}/os-extra_specs/{key}')],
    ),
    _rule(
        EXTRA_SPECS % 'delete',
        'rule:admin_api',
        'Delete an extra spec.',
        [('DELETE', '/flavors/{flavor_id}/os-extra_specs/{key}')],
    ),
    _rule(
        SERVICES % 'list',
        'rule:admin_api',
        'List services.',
        [('GET', '/os-services')],
    ),
    _rule(
        SERVICES % 'update',
        'rule:admin_api',
        'Enable, disable or force down a service.',
        [('PUT', '/os-services/{service_id}')],
    ),
    _rule(
        SERVICES % 'delete',
        'rule:admin_api',
        'Delete a service.',
        [('DELETE', '/os-services/{service_id}')],
    ),
    _rule(
        HYPERVISORS % 'list',
        'rule:admin_api',
        'List hypervisors.',
        [('GET', '/os-hypervisors')],
    ),
    _rule(
        HYPERVISORS % 'list-detail',
        'rule:admin_api',
        'List hypervisors with details.',
        [('GET', '/os-hypervisors/detail')],
    ),
    _rule(
        HYPERVISORS % 'show',
        'rule:admin_api',
        'Show a hypervisor.',
        [('GET', '/os-hypervisors/{hypervisor_id}')],
    ),
    _rule(
        AGGREGATES % 'index',
        'rule:admin_api',
        'List aggregates.',
        [('GET', '/os-aggregates')],
    ),
    _rule(
        AGGREGATES % 'show',
        'rule:admin_api',
        'Show an aggregate.',
        [('GET', '/os-aggregates/{aggregate_id}')],
    ),
    _rule(
        AGGREGATES % 'create',
        'rule:admin_api',
        'Create an aggregate.',
        [('POST', '/os-aggregates')],
    ),
    _rule(
        AGGREGATES % 'update',
        'rule:admin_api',
        'Update an aggregate.',
        [('PUT', '/os-aggregates/{aggregate_id}')],
    ),
    _rule(
        AGGREGATES % 'delete',
        'rule:admin_api',
        'Delete an aggregate.',
        [('DELETE', '/os-aggregates/{aggregate_id}')],
    ),
    _rule(
        AGGREGATES % 'add_host',
        'rule:admin_api',
        'Add a host.',
        [('POST', '/os-aggregates/{aggregate_id}/action')],
    ),
    _rule(
        AGGREGATES % 'remove_host',
        'rule:admin_api',
        'Remove a host.',
        [('POST', '/os-aggregates/{aggregate_id}/action')],
    ),
    _rule(
        AGGREGATES % 'set_metadata',
        'rule:admin_api',
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
        'rule:admin_api',
        'List availability zones with their hosts.',
        [('GET', '/os-availability-zone/detail')],
    ),
    _rule(
        GROUPS % 'index',
        'rule:admin_or_owner',
        'List server groups.',
        [('GET', '/os-server-groups')],
    ),
    _rule(
        GROUPS % 'index:all_projects',
        'rule:admin_api',
        'List server groups of every project.',
        [('GET', '/os-server-groups')],
    ),
    _rule(
        GROUPS % 'show',
        'rule:admin_or_owner',
        'Show a server group.',
        [('GET', '/os-server-groups/{server_group_id}')],
    ),
    _rule(
        GROUPS % 'create',
        'rule:admin_or_owner',
        'Create a server group.',
        [('POST', '/os-server-groups')],
    ),
    _rule(
        GROUPS % 'delete',
        'rule:admin_or_owner',
        'Delete a server group.',
        [('DELETE', '/os-server-groups/{server_group_id}')],
    ),
    _rule(
        EVENTS,
        'rule:service_or_admin',
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
        'rule:admin_or_owner',
        'Create an image.',
        [('POST', '/v2/images')],
    ),
    _rule(
        IMAGES % 'modify',
        'rule:admin_or_owner',
        "Change an image's properties.",
        [('PUT', '/v2/images/{image_id}'), ('PATCH', '/v2/images/{image_id}')],
    ),
    _rule(
        IMAGES % 'delete',
        'rule:admin_or_owner',
        'Delete an image.',
        [('DELETE', '/v2/images/{image_id}')],
    ),
    _rule(
        DRY_RUN,
        'rule:admin_api',
        'Ask the scheduler where a server would go, without claiming.',
        [('POST', '/os-scheduler/dry-run')],
    ),
    _rule(
        RECORDS,
        'rule:admin_api',
        "Read the scheduler's decision records.",
        [('GET', '/os-scheduler/records')],
    ),
    _rule(
        CELLS,
        'rule:admin_api',
        'List the cells with their numbers of hosts and servers.',
        [('GET', '/os-cells')],
    ),
    _rule(
        CAPACITY,
        'rule:admin_api',
        'Ask how many more of a flavor fit and where, without claiming.',
        [('GET', '/os-scheduler/capacity')],
    ),
    _rule(
        DASHBOARD,
        'rule:admin_api',
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
        'rule:admin_or_owner',
        "Show a project's quota limits.",
        [('GET', '/os-quota-sets/{tenant_id}')],
    ),
    _rule(
        QUOTAS % 'detail',
        'rule:admin_or_owner',
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
        'rule:admin_api',
        "Set a project's quota limits.",
        [('PUT', '/os-quota-sets/{tenant_id}')],
    ),
    _rule(
        QUOTAS % 'delete',
        'rule:admin_api',
        "Revert a project's quota limits to the defaults.",
        [('DELETE', '/os-quota-sets/{tenant_id}')],
    ),
    _rule(
        QUOTA_CLASSES % 'show',
        'rule:admin_api',
        'Show a quota class.',
        [('GET', '/os-quota-class-sets/{id}')],
    ),
    _rule(
        QUOTA_CLASSES % 'update',
        'rule:admin_api',
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
        'rule:admin_api',
        'Show the limits of another project (tenant_id).',
        [('GET', '/limits')],
    ),
    _rule(
        USAGE % 'show',
        'rule:admin_or_owner',
        "Show a project's usage.",
        [('GET', '/os-simple-tenant-usage/{tenant_id}')],
    ),
    _rule(
        USAGE % 'list',
        'rule:admin_api',
        'List the usage of every project.',
        [('GET', '/os-simple-tenant-usage')],
    ),
    _rule(
        HOSTS % 'list',
        'rule:admin_api',
        'List hosts (below 2.43).',
        [('GET', '/os-hosts')],
    ),
    _rule(
        HOSTS % 'show',
        'rule:admin_api',
        'Show a host (below 2.43).',
        [('GET', '/os-hosts/{host_name}')],
    ),
    _rule(
        HYPERVISORS % 'search',
        'rule:admin_api',
        'Search hypervisors by name (below 2.53).',
        [('GET', '/os-hypervisors/{hypervisor_hostname_pattern}/search')],
    ),
    _rule(
        HYPERVISORS % 'servers',
        'rule:admin_api',
        'List the servers of hypervisors (below 2.53).',
        [('GET', '/os-hypervisors/{hypervisor_hostname_pattern}/servers')],
    ),
    _rule(
        AUDIT_LOG % 'list',
        'rule:admin_api',
        'List instance usage audit logs.',
        [('GET', '/os-instance_usage_audit_log')],
    ),
    _rule(
        AUDIT_LOG % 'show',
        'rule:admin_api',
        'Show an instance usage audit log.',
        [('GET', '/os-instance_usage_audit_log/{before_timestamp}')],
    ),
]
RULES += policies_access.RULES


def list_rules():
    """For oslopolicy-sample-generator."""
    return RULES
