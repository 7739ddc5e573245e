"""Placement's policy rules, with the names, defaults and scope types of
OpenStack Placement 16.0.0.

Every route's rule points at one of five base rules, all for
project-scoped tokens: ``admin_or_service_api`` (most routes),
``service_api`` (the reshaper), ``admin_or_project_reader_or_service_api``
(``GET /usages``, also for a reader of the project asked about). With
``[oslo_policy] enforce_new_defaults = False`` each base rule also accepts
its deprecated form, ``role:admin`` (oslo.policy ORs them), which opens the
reshaper to admins. With ``enforce_scope`` (oslo.policy's default), a
system-scoped token is refused (403) on every route, whatever its roles;
without it, only the check strings decide. A policy file overrides any of
these rules by name.
"""

from oslo_log import versionutils
from oslo_policy import policy

from nimbus.common import policy as common_policy

ADMIN_OR_SERVICE = 'rule:admin_or_service_api'
SERVICE = 'rule:service_api'
ADMIN_OR_PROJECT_READER_OR_SERVICE = (
    'rule:admin_or_project_reader_or_service_api'
)
PROJECT = ['project']

_LEGACY = policy.DeprecatedRule(
    name='rule:admin_api',
    check_str='role:admin',
    deprecated_reason=(
        'Placement policies gained reader and service personas with project '
        'scope; the admin-only defaults are kept for enforce_new_defaults = '
        'False.'
    ),
    deprecated_since=versionutils.deprecated.WALLABY,
)

BASE_RULES = [
    policy.RuleDefault(
        'admin_api',
        'role:admin',
        description='The admin role (legacy default).',
        scope_types=PROJECT,
    ),
    policy.RuleDefault(
        'service_api',
        'role:service',
        description='Service-to-service calls.',
        scope_types=PROJECT,
        deprecated_rule=_LEGACY,
    ),
    policy.RuleDefault(
        'admin_or_service_api',
        'role:admin or role:service',
        description='An admin or a service.',
        scope_types=PROJECT,
        deprecated_rule=_LEGACY,
    ),
    policy.RuleDefault(
        'project_reader_api',
        'role:reader and project_id:%(project_id)s',
        description='A reader of the project in the target.',
        deprecated_rule=_LEGACY,
    ),
    policy.RuleDefault(
        'admin_or_project_reader_or_service_api',
        'role:admin or rule:project_reader_api or role:service',
        description='An admin, a service or a reader of the '
        'project in the target.',
        scope_types=PROJECT,
        deprecated_rule=_LEGACY,
    ),
]


def _rule(name, check_str, description, ops):
    return common_policy.documented(name, check_str, description, ops, PROJECT)


_RP = '/resource_providers/{uuid}'
# One declared rule per policy name (a contract: each names its own
# check, text and operations); alike by design.
RULES = BASE_RULES + [
    _rule(
        'placement:resource_providers:list',
        ADMIN_OR_SERVICE,
        'List resource providers.',
        [('GET', '/resource_providers')],
    ),
    _rule(
        'placement:resource_providers:create',
        ADMIN_OR_SERVICE,
        'Create a resource provider.',
        [('POST', '/resource_providers')],
    ),
    _rule(
        'placement:resource_providers:show',
        ADMIN_OR_SERVICE,
        'Show a resource provider.',
        [('GET', _RP)],
    ),
    _rule(
        'placement:resource_providers:update',
        ADMIN_OR_SERVICE,
        'Update a resource provider.',
        [('PUT', _RP)],
    ),
    _rule(
        'placement:resource_providers:delete',
        ADMIN_OR_SERVICE,
        'Delete a resource provider.',
        [('DELETE', _RP)],
    ),
    _rule(
        'placement:resource_classes:list',
        ADMIN_OR_SERVICE,
        'List resource classes.',
        [('GET', '/resource_classes')],
    ),
    _rule(
        'placement:resource_classes:create',
        ADMIN_OR_SERVICE,
        'Create a resource class.',
        [('POST', '/resource_classes')],
    ),
    _rule(
        'placement:resource_classes:show',
        ADMIN_OR_SERVICE,
        'Show a resource class.',
        [('GET', '/resource_classes/{name}')],
    ),
    _rule(
        'placement:resource_classes:update',
        ADMIN_OR_SERVICE,
        'Create or update a resource class.',
        [('PUT', '/resource_classes/{name}')],
    ),
    _rule(
        'placement:resource_classes:delete',
        ADMIN_OR_SERVICE,
        'Delete a resource class.',
        [('DELETE', '/resource_classes/{name}')],
    ),
    _rule(
        'placement:resource_providers:inventories:list',
        ADMIN_OR_SERVICE,
        'List inventories.',
        [('GET', _RP + '/inventories')],
    ),
    _rule(
        'placement:resource_providers:inventories:create',
        ADMIN_OR_SERVICE,
        'Create an inventory.',
        [('POST', _RP + '/inventories')],
    ),
    _rule(
        'placement:resource_providers:inventories:show',
        ADMIN_OR_SERVICE,
        'Show an inventory.',
        [('GET', _RP + '/inventories/{rc}')],
    ),
    _rule(
        'placement:resource_providers:inventories:update',
        ADMIN_OR_SERVICE,
        'Update inventories.',
        [('PUT', _RP + '/inventories'), ('PUT', _RP + '/inventories/{rc}')],
    ),
    _rule(
        'placement:resource_providers:inventories:delete',
        ADMIN_OR_SERVICE,
        'Delete inventories.',
        [
            ('DELETE', _RP + '/inventories'),
            ('DELETE', _RP + '/inventories/{rc}'),
        ],
    ),
    _rule(
        'placement:resource_providers:aggregates:list',
        ADMIN_OR_SERVICE,
        'List provider aggregates.',
        [('GET', _RP + '/aggregates')],
    ),
    _rule(
        'placement:resource_providers:aggregates:update',
        ADMIN_OR_SERVICE,
        'Update provider aggregates.',
        [('PUT', _RP + '/aggregates')],
    ),
    _rule(
        'placement:resource_providers:usages',
        ADMIN_OR_SERVICE,
        'Show provider usages.',
        [('GET', _RP + '/usages')],
    ),
    _rule(
        'placement:usages',
        ADMIN_OR_PROJECT_READER_OR_SERVICE,
        'Show usages of a project or user.',
        [('GET', '/usages')],
    ),
    _rule(
        'placement:traits:list',
        ADMIN_OR_SERVICE,
        'List traits.',
        [('GET', '/traits')],
    ),
    _rule(
        'placement:traits:show',
        ADMIN_OR_SERVICE,
        'Show a trait.',
        [('GET', '/traits/{name}')],
    ),
    _rule(
        'placement:traits:update',
        ADMIN_OR_SERVICE,
        'Create a trait.',
        [('PUT', '/traits/{name}')],
    ),
    _rule(
        'placement:traits:delete',
        ADMIN_OR_SERVICE,
        'Delete a trait.',
        [('DELETE', '/traits/{name}')],
    ),
    _rule(
        'placement:resource_providers:traits:list',
        ADMIN_OR_SERVICE,
        'List provider traits.',
        [('GET', _RP + '/traits')],
    ),
    _rule(
        'placement:resource_providers:traits:update',
        ADMIN_OR_SERVICE,
        'Set provider traits.',
        [('PUT', _RP + '/traits')],
    ),
    _rule(
        'placement:resource_providers:traits:delete',
        ADMIN_OR_SERVICE,
        'Remove provider traits.',
        [('DELETE', _RP + '/traits')],
    ),
    _rule(
        'placement:allocations:manage',
        ADMIN_OR_SERVICE,
        'Write allocations of many consumers.',
        [('POST', '/allocations')],
    ),
    _rule(
        'placement:allocations:list',
        ADMIN_OR_SERVICE,
        'Show allocations of a consumer.',
        [('GET', '/allocations/{consumer_uuid}')],
    ),
    _rule(
        'placement:allocations:update',
        ADMIN_OR_SERVICE,
        'Write allocations of a consumer.',
        [('PUT', '/allocations/{consumer_uuid}')],
    ),
    _rule(
        'placement:allocations:delete',
        ADMIN_OR_SERVICE,
        'Delete allocations of a consumer.',
        [('DELETE', '/allocations/{consumer_uuid}')],
    ),
    _rule(
        'placement:resource_providers:allocations:list',
        ADMIN_OR_SERVICE,
        'List allocations on a provider.',
        [('GET', _RP + '/allocations')],
    ),
    _rule(
        'placement:nimbus:allocations:list',
        ADMIN_OR_SERVICE,
        "List every consumer's allocations (Nimbus's own route, for the "
        'consistency audit).',
        [('GET', '/nimbus/allocations')],
    ),
    _rule(
        'placement:nimbus:provider_usages:list',
        ADMIN_OR_SERVICE,
        "List every provider's inventories and usages (Nimbus's own "
        'route, for nimbus hosts).',
        [('GET', '/nimbus/provider_usages')],
    ),
    _rule(
        'placement:allocation_candidates:list',
        ADMIN_OR_SERVICE,
        'List allocation candidates.',
        [('GET', '/allocation_candidates')],
    ),
    _rule(
        'placement:reshaper:reshape',
        SERVICE,
        'Reshape provider inventories and allocations atomically.',
        [('POST', '/reshaper')],
    ),
]


def list_rules():
    """For oslopolicy-sample-generator and the enforcer."""
    return RULES
