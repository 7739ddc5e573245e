"""The check strings and base rules every compute API policy module uses.

A leaf module: the per-noun ``policies_*`` modules and
:mod:`nimbus.api.policies` import it, it imports none of them.
"""

from oslo_log import versionutils
from oslo_policy import policy

from nimbus.common import policy as common_policy

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


def rule(name, check, description, operations):
    """A documented rule for project-scoped tokens."""
    return common_policy.documented(
        name, check, description, operations, PROJECT
    )
