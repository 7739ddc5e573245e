"""Placement's policy rules, with the same names and defaults as OpenStack
Placement: everything is for admins or the service role; usages are also
for a reader of the project asked about; the reshaper is for the service
role only. With ``[oslo_policy] enforce_new_defaults = False`` the legacy
``role:admin`` rule is accepted as well (oslo.policy ORs deprecated rules).
"""

from oslo_policy import policy

ADMIN = 'role:admin'
SERVICE = 'role:service'
ADMIN_OR_SERVICE = 'role:admin or role:service'
PROJECT_READER_OR_ADMIN_OR_SERVICE = (
    '(role:reader and project_id:%(project_id)s) or role:admin or '
    'role:service')


def _rule(name, check_str, description, ops):
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{'method': m, 'path': p} for m, p in ops],
        scope_types=['project'],
        deprecated_rule=policy.DeprecatedRule(
            name=name, check_str=ADMIN, deprecated_reason=(
                'Placement moved to admin-or-service defaults with project '
                'scope.'), deprecated_since='W'))


_RP = '/resource_providers/{uuid}'
RULES = [
    policy.RuleDefault('admin_api', ADMIN,
                       'Legacy rule: the admin role.'),
    _rule('placement:resource_providers:list', ADMIN_OR_SERVICE,
          'List resource providers.', [('GET', '/resource_providers')]),
    _rule('placement:resource_providers:create', ADMIN_OR_SERVICE,
          'Create a resource provider.', [('POST', '/resource_providers')]),
    _rule('placement:resource_providers:show', ADMIN_OR_SERVICE,
          'Show a resource provider.', [('GET', _RP)]),
    _rule('placement:resource_providers:update', ADMIN_OR_SERVICE,
          'Update a resource provider.', [('PUT', _RP)]),
    _rule('placement:resource_providers:delete', ADMIN_OR_SERVICE,
          'Delete a resource provider.', [('DELETE', _RP)]),
    _rule('placement:resource_classes:list', ADMIN_OR_SERVICE,
          'List resource classes.', [('GET', '/resource_classes')]),
    _rule('placement:resource_classes:create', ADMIN_OR_SERVICE,
          'Create a resource class.', [('POST', '/resource_classes')]),
    _rule('placement:resource_classes:show', ADMIN_OR_SERVICE,
          'Show a resource class.', [('GET', '/resource_classes/{name}')]),
    _rule('placement:resource_classes:update', ADMIN_OR_SERVICE,
          'Create or update a resource class.',
          [('PUT', '/resource_classes/{name}')]),
    _rule('placement:resource_classes:delete', ADMIN_OR_SERVICE,
          'Delete a resource class.', [('DELETE', '/resource_classes/{name}')]),
    _rule('placement:resource_providers:inventories:list', ADMIN_OR_SERVICE,
          'List inventories.', [('GET', _RP + '/inventories')]),
    _rule('placement:resource_providers:inventories:create',
          ADMIN_OR_SERVICE, 'Create an inventory.',
          [('POST', _RP + '/inventories')]),
    _rule('placement:resource_providers:inventories:show', ADMIN_OR_SERVICE,
          'Show an inventory.', [('GET', _RP + '/inventories/{rc}')]),
    _rule('placement:resource_providers:inventories:update',
          ADMIN_OR_SERVICE, 'Update inventories.',
          [('PUT', _RP + '/inventories'), ('PUT', _RP + '/inventories/{rc}')]),
    _rule('placement:resource_providers:inventories:delete',
          ADMIN_OR_SERVICE, 'Delete inventories.',
          [('DELETE', _RP + '/inventories'),
           ('DELETE', _RP + '/inventories/{rc}')]),
    _rule('placement:resource_providers:aggregates:list', ADMIN_OR_SERVICE,
          'List provider aggregates.', [('GET', _RP + '/aggregates')]),
    _rule('placement:resource_providers:aggregates:update',
          ADMIN_OR_SERVICE, 'Update provider aggregates.',
          [('PUT', _RP + '/aggregates')]),
    _rule('placement:resource_providers:usages', ADMIN_OR_SERVICE,
          'Show provider usages.', [('GET', _RP + '/usages')]),
    _rule('placement:usages', PROJECT_READER_OR_ADMIN_OR_SERVICE,
          'Show usages of a project or user.', [('GET', '/usages')]),
    _rule('placement:traits:list', ADMIN_OR_SERVICE, 'List traits.',
          [('GET', '/traits')]),
    _rule('placement:traits:show', ADMIN_OR_SERVICE, 'Show a trait.',
          [('GET', '/traits/{name}')]),
    _rule('placement:traits:update', ADMIN_OR_SERVICE, 'Create a trait.',
          [('PUT', '/traits/{name}')]),
    _rule('placement:traits:delete', ADMIN_OR_SERVICE, 'Delete a trait.',
          [('DELETE', '/traits/{name}')]),
    _rule('placement:resource_providers:traits:list', ADMIN_OR_SERVICE,
          'List provider traits.', [('GET', _RP + '/traits')]),
    _rule('placement:resource_providers:traits:update', ADMIN_OR_SERVICE,
          'Set provider traits.', [('PUT', _RP + '/traits')]),
    _rule('placement:resource_providers:traits:delete', ADMIN_OR_SERVICE,
          'Remove provider traits.', [('DELETE', _RP + '/traits')]),
    _rule('placement:allocations:manage', ADMIN_OR_SERVICE,
          'Write allocations of many consumers.', [('POST', '/allocations')]),
    _rule('placement:allocations:list', ADMIN_OR_SERVICE,
          'Show allocations of a consumer.',
          [('GET', '/allocations/{consumer_uuid}')]),
    _rule('placement:allocations:update', ADMIN_OR_SERVICE,
          'Write allocations of a consumer.',
          [('PUT', '/allocations/{consumer_uuid}')]),
    _rule('placement:allocations:delete', ADMIN_OR_SERVICE,
          'Delete allocations of a consumer.',
          [('DELETE', '/allocations/{consumer_uuid}')]),
    _rule('placement:resource_providers:allocations:list', ADMIN_OR_SERVICE,
          'List allocations on a provider.', [('GET', _RP + '/allocations')]),
    _rule('placement:allocation_candidates:list', ADMIN_OR_SERVICE,
          'List allocation candidates.', [('GET', '/allocation_candidates')]),
    _rule('placement:reshaper:reshape', SERVICE,
          'Reshape provider inventories and allocations atomically.',
          [('POST', '/reshaper')]),
]


def list_rules():
    """For oslopolicy-sample-generator and the enforcer."""
    return RULES
