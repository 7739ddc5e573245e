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

The rules live in one module per noun; the check strings they share are
in :mod:`nimbus.api.policies_base`. This module gathers them for the
enforcer and ``oslopolicy-sample-generator`` (namespace ``nimbus.api``)
and names every rule for the handlers.
"""

from nimbus.api import policies_access
from nimbus.api import policies_admin
from nimbus.api import policies_base
from nimbus.api import policies_flavors
from nimbus.api import policies_images
from nimbus.api import policies_quotas
from nimbus.api import policies_scheduler
from nimbus.api import policies_server_actions
from nimbus.api import policies_server_moves_live
from nimbus.api import policies_server_moves_resize
from nimbus.api import policies_server_moves_shelve
from nimbus.api import policies_servers
from nimbus.api.policies_admin import AGGREGATES  # noqa: F401
from nimbus.api.policies_admin import AUDIT_LOG  # noqa: F401
from nimbus.api.policies_admin import AZ  # noqa: F401
from nimbus.api.policies_admin import HOSTS  # noqa: F401
from nimbus.api.policies_admin import HYPERVISORS  # noqa: F401
from nimbus.api.policies_admin import MIGRATIONS  # noqa: F401
from nimbus.api.policies_admin import SERVICES  # noqa: F401
from nimbus.api.policies_flavors import EXTRA_SPECS  # noqa: F401
from nimbus.api.policies_flavors import FLAVORS  # noqa: F401
from nimbus.api.policies_images import IMAGES  # noqa: F401
from nimbus.api.policies_quotas import LIMITS  # noqa: F401
from nimbus.api.policies_quotas import LIMITS_OTHER_PROJECT  # noqa: F401
from nimbus.api.policies_quotas import QUOTA_CLASSES  # noqa: F401
from nimbus.api.policies_quotas import QUOTAS  # noqa: F401
from nimbus.api.policies_quotas import USAGE  # noqa: F401
from nimbus.api.policies_scheduler import CAPACITY  # noqa: F401
from nimbus.api.policies_scheduler import CELLS  # noqa: F401
from nimbus.api.policies_scheduler import DASHBOARD  # noqa: F401
from nimbus.api.policies_scheduler import DRY_RUN  # noqa: F401
from nimbus.api.policies_scheduler import MOVE_DRY_RUN  # noqa: F401
from nimbus.api.policies_scheduler import RECORDS  # noqa: F401
from nimbus.api.policies_servers import ALL_TENANTS  # noqa: F401
from nimbus.api.policies_servers import EVENTS  # noqa: F401
from nimbus.api.policies_servers import EXT_ATTRS  # noqa: F401
from nimbus.api.policies_servers import GROUPS  # noqa: F401
from nimbus.api.policies_servers import SERVERS  # noqa: F401

RULES = (
    policies_base.BASE
    + policies_servers.RULES
    + policies_server_actions.RULES
    + policies_server_moves_shelve.RULES
    + policies_server_moves_resize.RULES
    + policies_server_moves_live.RULES
    + policies_flavors.RULES
    + policies_admin.RULES
    + policies_images.RULES
    + policies_scheduler.RULES
    + policies_quotas.RULES
    + policies_access.RULES
)


def list_rules():
    """For oslopolicy-sample-generator."""
    return RULES
