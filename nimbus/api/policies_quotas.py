"""Default policy rules of quotas, limits and usage (Nova's defaults: a
project reads its own, administrators change them and read everyone's)."""

from nimbus.api.policies_base import ADMIN
from nimbus.api.policies_base import ANY
from nimbus.api.policies_base import READER_OR_ADMIN
from nimbus.api.policies_base import rule

QUOTAS = 'os_compute_api:os-quota-sets:%s'
QUOTA_CLASSES = 'os_compute_api:os-quota-class-sets:%s'
LIMITS = 'os_compute_api:limits'
LIMITS_OTHER_PROJECT = 'os_compute_api:limits:other_project'
USAGE = 'os_compute_api:os-simple-tenant-usage:%s'

RULES = [
    rule(
        QUOTAS % 'show',
        READER_OR_ADMIN,
        "Show a project's quota limits.",
        [('GET', '/os-quota-sets/{tenant_id}')],
    ),
    rule(
        QUOTAS % 'detail',
        READER_OR_ADMIN,
        "Show a project's quota limits with their usage.",
        [('GET', '/os-quota-sets/{tenant_id}/detail')],
    ),
    rule(
        QUOTAS % 'defaults',
        ANY,
        'Show the default quota limits.',
        [('GET', '/os-quota-sets/{tenant_id}/defaults')],
    ),
    rule(
        QUOTAS % 'update',
        ADMIN,
        "Set a project's quota limits.",
        [('PUT', '/os-quota-sets/{tenant_id}')],
    ),
    rule(
        QUOTAS % 'delete',
        ADMIN,
        "Revert a project's quota limits to the defaults.",
        [('DELETE', '/os-quota-sets/{tenant_id}')],
    ),
    rule(
        QUOTA_CLASSES % 'show',
        ADMIN,
        'Show a quota class.',
        [('GET', '/os-quota-class-sets/{id}')],
    ),
    rule(
        QUOTA_CLASSES % 'update',
        ADMIN,
        'Update a quota class.',
        [('PUT', '/os-quota-class-sets/{id}')],
    ),
    rule(
        LIMITS,
        ANY,
        "Show one's own project's absolute limits.",
        [('GET', '/limits')],
    ),
    rule(
        LIMITS_OTHER_PROJECT,
        ADMIN,
        'Show the limits of another project (tenant_id).',
        [('GET', '/limits')],
    ),
    rule(
        USAGE % 'show',
        READER_OR_ADMIN,
        "Show a project's usage.",
        [('GET', '/os-simple-tenant-usage/{tenant_id}')],
    ),
    rule(
        USAGE % 'list',
        ADMIN,
        'List the usage of every project.',
        [('GET', '/os-simple-tenant-usage')],
    ),
]
