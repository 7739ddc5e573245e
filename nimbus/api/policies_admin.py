"""Default policy rules of the administrators' os-* resources: services,
hypervisors, aggregates, availability zones, hosts and the usage audit
log."""

from nimbus.api.policies_base import ADMIN
from nimbus.api.policies_base import ANY
from nimbus.api.policies_base import rule

SERVICES = 'os_compute_api:os-services:%s'
HYPERVISORS = 'os_compute_api:os-hypervisors:%s'
MIGRATIONS = 'os_compute_api:os-migrations:index'
AGGREGATES = 'os_compute_api:os-aggregates:%s'
AZ = 'os_compute_api:os-availability-zone:%s'
HOSTS = 'os_compute_api:os-hosts:%s'
AUDIT_LOG = 'os_compute_api:os-instance-usage-audit-log:%s'

RULES = [
    rule(
        MIGRATIONS,
        ADMIN,
        'List the migrations of every cell (resizes, cold and live '
        'migrations, evacuations).',
        [('GET', '/os-migrations')],
    ),
    rule(
        SERVICES % 'list', ADMIN, 'List services.', [('GET', '/os-services')]
    ),
    rule(
        SERVICES % 'update',
        ADMIN,
        'Enable, disable or force down a service.',
        [('PUT', '/os-services/{service_id}')],
    ),
    rule(
        SERVICES % 'delete',
        ADMIN,
        'Delete a service.',
        [('DELETE', '/os-services/{service_id}')],
    ),
    rule(
        HYPERVISORS % 'list',
        ADMIN,
        'List hypervisors.',
        [('GET', '/os-hypervisors')],
    ),
    rule(
        HYPERVISORS % 'list-detail',
        ADMIN,
        'List hypervisors with details.',
        [('GET', '/os-hypervisors/detail')],
    ),
    rule(
        HYPERVISORS % 'show',
        ADMIN,
        'Show a hypervisor.',
        [('GET', '/os-hypervisors/{hypervisor_id}')],
    ),
    rule(
        HYPERVISORS % 'uptime',
        ADMIN,
        'Show the uptime of a hypervisor (below 2.88).',
        [('GET', '/os-hypervisors/{hypervisor_id}/uptime')],
    ),
    rule(
        HYPERVISORS % 'search',
        ADMIN,
        'Search hypervisors by name (below 2.53).',
        [('GET', '/os-hypervisors/{hypervisor_hostname_pattern}/search')],
    ),
    rule(
        HYPERVISORS % 'servers',
        ADMIN,
        'List the servers of hypervisors (below 2.53).',
        [('GET', '/os-hypervisors/{hypervisor_hostname_pattern}/servers')],
    ),
    rule(
        AGGREGATES % 'index',
        ADMIN,
        'List aggregates.',
        [('GET', '/os-aggregates')],
    ),
    rule(
        AGGREGATES % 'show',
        ADMIN,
        'Show an aggregate.',
        [('GET', '/os-aggregates/{aggregate_id}')],
    ),
    rule(
        AGGREGATES % 'create',
        ADMIN,
        'Create an aggregate.',
        [('POST', '/os-aggregates')],
    ),
    rule(
        AGGREGATES % 'update',
        ADMIN,
        'Update an aggregate.',
        [('PUT', '/os-aggregates/{aggregate_id}')],
    ),
    rule(
        AGGREGATES % 'delete',
        ADMIN,
        'Delete an aggregate.',
        [('DELETE', '/os-aggregates/{aggregate_id}')],
    ),
    rule(
        AGGREGATES % 'add_host',
        ADMIN,
        'Add a host.',
        [('POST', '/os-aggregates/{aggregate_id}/action')],
    ),
    rule(
        AGGREGATES % 'remove_host',
        ADMIN,
        'Remove a host.',
        [('POST', '/os-aggregates/{aggregate_id}/action')],
    ),
    rule(
        AGGREGATES % 'set_metadata',
        ADMIN,
        'Set metadata.',
        [('POST', '/os-aggregates/{aggregate_id}/action')],
    ),
    rule(
        AZ % 'list',
        ANY,
        'List availability zones.',
        [('GET', '/os-availability-zone')],
    ),
    rule(
        AZ % 'detail',
        ADMIN,
        'List availability zones with their hosts.',
        [('GET', '/os-availability-zone/detail')],
    ),
    rule(
        HOSTS % 'list',
        ADMIN,
        'List hosts (below 2.43).',
        [('GET', '/os-hosts')],
    ),
    rule(
        HOSTS % 'show',
        ADMIN,
        'Show a host (below 2.43).',
        [('GET', '/os-hosts/{host_name}')],
    ),
    rule(
        HOSTS % 'update',
        ADMIN,
        'Enable or disable a host, or set its maintenance mode (below 2.43).',
        [('PUT', '/os-hosts/{host_name}')],
    ),
    rule(
        HOSTS % 'reboot',
        ADMIN,
        'Reboot a host (below 2.43).',
        [('GET', '/os-hosts/{host_name}/reboot')],
    ),
    rule(
        HOSTS % 'shutdown',
        ADMIN,
        'Shut a host down (below 2.43).',
        [('GET', '/os-hosts/{host_name}/shutdown')],
    ),
    rule(
        HOSTS % 'start',
        ADMIN,
        'Start a host (below 2.43).',
        [('GET', '/os-hosts/{host_name}/startup')],
    ),
    rule(
        AUDIT_LOG % 'list',
        ADMIN,
        'List instance usage audit logs.',
        [('GET', '/os-instance_usage_audit_log')],
    ),
    rule(
        AUDIT_LOG % 'show',
        ADMIN,
        'Show an instance usage audit log.',
        [('GET', '/os-instance_usage_audit_log/{before_timestamp}')],
    ),
]
