"""Policy rules of the accelerator API, named and defaulted as Cyborg's:
device profiles are read by project readers and written by admins;
accelerator requests are created, read and deleted (while unbound) within
their project; binding, unbinding, deleting a bound accelerator request
and deleting those of an instance are for the service role only (what
Nimbus's conductors and computes present, as Nova does to Cyborg): an
admin without it is refused, so no project, nor an admin by mistake, can
free the device of a running server. Devices and deployables are read by
admins and services.

The service role counts in the caller's own token (``role:service``) or in
a service token sent along with it (``service_roles:service``,
keystonemiddleware's ``X-Service-Roles``), as Cyborg accepts Nova's.
"""

from nimbus.common import policy as common_policy

ADMIN = 'role:admin'
SERVICE = 'role:service or service_roles:service'
SERVICE_OR_ADMIN = '%s or role:admin' % SERVICE
PROJECT_READER = '(role:reader or role:member) and project_id:%(project_id)s'
PROJECT_MEMBER = 'role:member and project_id:%(project_id)s'
READER_OR_ADMIN = '(%s) or %s' % (PROJECT_READER, SERVICE_OR_ADMIN)
MEMBER_OR_ADMIN = '(%s) or %s' % (PROJECT_MEMBER, SERVICE_OR_ADMIN)

DP = 'cyborg:device_profile:%s'
ARQ = 'cyborg:arq:%s'
DEVICE = 'cyborg:device:%s'
DEPLOYABLE = 'cyborg:deployable:%s'
ATTRIBUTE = 'cyborg:attribute:%s'
# Cyborg's project_manager_or_admin, for reading attributes
MANAGER_OR_ADMIN = '(role:manager and project_id:%(project_id)s) or role:admin'


def _rule(name, check_str, description, ops):
    return common_policy.documented(
        name, check_str, description, ops, ['project']
    )


_DPS = '/v2/device_profiles'
_ARQS = '/v2/accelerator_requests'
# One declared rule per policy name (a contract: each names its own
# check, text and operations); alike by design.
RULES = [
    _rule(
        DP % 'get_all',
        READER_OR_ADMIN,
        'List device profiles.',
        [('GET', _DPS)],
    ),
    _rule(
        DP % 'get_one',
        READER_OR_ADMIN,
        'Show a device profile.',
        [('GET', _DPS + '/{device_profile_name_or_uuid}')],
    ),
    _rule(DP % 'create', ADMIN, 'Create a device profile.', [('POST', _DPS)]),
    _rule(
        DP % 'delete',
        ADMIN,
        'Delete device profiles.',
        [('DELETE', _DPS + '/{uuid}'), ('DELETE', _DPS + '?value=')],
    ),
    _rule(
        ARQ % 'get_all',
        READER_OR_ADMIN,
        "List accelerator requests (a project's own; all for the "
        'service role or an admin).',
        [('GET', _ARQS)],
    ),
    _rule(
        ARQ % 'get_one',
        READER_OR_ADMIN,
        'Show an accelerator request.',
        [('GET', _ARQS + '/{uuid}')],
    ),
    _rule(
        ARQ % 'create',
        MEMBER_OR_ADMIN,
        'Create accelerator requests from a device profile.',
        [('POST', _ARQS)],
    ),
    _rule(
        ARQ % 'update',
        SERVICE,
        'Bind or unbind accelerator requests (the service role only: '
        'the conductor binds, the compute unbinds).',
        [('PATCH', _ARQS), ('PATCH', _ARQS + '/{uuid}')],
    ),
    _rule(
        ARQ % 'delete',
        MEMBER_OR_ADMIN,
        'Delete accelerator requests by uuid (an unbound one; a bound one '
        'needs cyborg:arq:delete_bound as well).',
        [('DELETE', _ARQS + '?arqs='), ('DELETE', _ARQS + '/{uuid}')],
    ),
    _rule(
        ARQ % 'delete_bound',
        SERVICE,
        'Delete an accelerator request bound to an instance (the service '
        'role only: the device of a running server is freed by deleting '
        'the server).',
        [('DELETE', _ARQS + '?arqs='), ('DELETE', _ARQS + '/{uuid}')],
    ),
    _rule(
        ARQ % 'delete_by_instance',
        SERVICE,
        'Delete the accelerator requests of an instance (the service role '
        'only).',
        [('DELETE', _ARQS + '?instance=')],
    ),
    _rule(
        ARQ % 'all_projects',
        SERVICE_OR_ADMIN,
        'See accelerator requests of every project.',
        [('GET', _ARQS)],
    ),
    _rule(
        DEVICE % 'get_all',
        SERVICE_OR_ADMIN,
        'List devices.',
        [('GET', '/v2/devices')],
    ),
    _rule(
        DEVICE % 'get_one',
        SERVICE_OR_ADMIN,
        'Show a device.',
        [('GET', '/v2/devices/{uuid}')],
    ),
    _rule(
        DEPLOYABLE % 'get_all',
        SERVICE_OR_ADMIN,
        'List deployables.',
        [('GET', '/v2/deployables')],
    ),
    _rule(
        DEPLOYABLE % 'get_one',
        SERVICE_OR_ADMIN,
        'Show a deployable.',
        [('GET', '/v2/deployables/{uuid}')],
    ),
    _rule(
        ATTRIBUTE % 'get_all',
        MANAGER_OR_ADMIN,
        'List attributes of deployables.',
        [('GET', '/v2/attributes')],
    ),
    _rule(
        ATTRIBUTE % 'get_one',
        MANAGER_OR_ADMIN,
        'Show an attribute.',
        [('GET', '/v2/attributes/{uuid}')],
    ),
    _rule(
        ATTRIBUTE % 'create',
        ADMIN,
        'Create an attribute of a deployable.',
        [('POST', '/v2/attributes')],
    ),
    _rule(
        ATTRIBUTE % 'delete',
        ADMIN,
        'Delete an attribute.',
        [('DELETE', '/v2/attributes/{uuid}')],
    ),
]


def list_rules():
    """For oslopolicy-sample-generator and the enforcer."""
    return RULES
