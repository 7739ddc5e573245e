"""Default policy rules of servers, server groups and external events."""

from nimbus.api.policies_base import ADMIN
from nimbus.api.policies_base import OWNER_OR_ADMIN
from nimbus.api.policies_base import READER_OR_ADMIN
from nimbus.api.policies_base import SERVICE_OR_ADMIN
from nimbus.api.policies_base import rule

SERVERS = 'os_compute_api:servers:%s'
EXT_ATTRS = 'os_compute_api:os-extended-server-attributes'
ALL_TENANTS = 'os_compute_api:servers:index:get_all_tenants'
GROUPS = 'os_compute_api:os-server-groups:%s'
EVENTS = 'os_compute_api:os-server-external-events:create'

# One declared rule per policy name (a contract: each names its own
# check, text and operations); alike by design.
RULES = [
    rule(
        SERVERS % 'index',
        READER_OR_ADMIN,
        'List servers.',
        [('GET', '/servers')],
    ),
    rule(
        SERVERS % 'detail',
        READER_OR_ADMIN,
        'List servers with details.',
        [('GET', '/servers/detail')],
    ),
    rule(
        ALL_TENANTS,
        ADMIN,
        'List servers of every project.',
        [('GET', '/servers?all_tenants=1')],
    ),
    rule(
        SERVERS % 'show',
        READER_OR_ADMIN,
        'Show a server.',
        [('GET', '/servers/{server_id}')],
    ),
    rule(
        SERVERS % 'create',
        OWNER_OR_ADMIN,
        'Create servers.',
        [('POST', '/servers')],
    ),
    rule(
        SERVERS % 'create:forced_host',
        ADMIN,
        'Create a server on a named host (availability_zone "az:host").',
        [('POST', '/servers')],
    ),
    rule(
        SERVERS % 'update',
        OWNER_OR_ADMIN,
        'Update a server (name, access addresses, description, hostname).',
        [('PUT', '/servers/{server_id}')],
    ),
    rule(
        SERVERS % 'delete',
        OWNER_OR_ADMIN,
        'Delete a server.',
        [('DELETE', '/servers/{server_id}')],
    ),
    rule(
        EXT_ATTRS,
        ADMIN,
        'See OS-EXT-SRV-ATTR host fields.',
        [('GET', '/servers/{server_id}')],
    ),
    rule(
        GROUPS % 'index',
        READER_OR_ADMIN,
        'List server groups.',
        [('GET', '/os-server-groups')],
    ),
    rule(
        GROUPS % 'index:all_projects',
        ADMIN,
        'List server groups of every project.',
        [('GET', '/os-server-groups')],
    ),
    rule(
        GROUPS % 'show',
        READER_OR_ADMIN,
        'Show a server group.',
        [('GET', '/os-server-groups/{server_group_id}')],
    ),
    rule(
        GROUPS % 'create',
        OWNER_OR_ADMIN,
        'Create a server group.',
        [('POST', '/os-server-groups')],
    ),
    rule(
        GROUPS % 'delete',
        OWNER_OR_ADMIN,
        'Delete a server group.',
        [('DELETE', '/os-server-groups/{server_group_id}')],
    ),
    rule(
        EVENTS,
        SERVICE_OR_ADMIN,
        'Deliver external events.',
        [('POST', '/os-server-external-events')],
    ),
]
