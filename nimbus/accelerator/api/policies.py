"""Policy rules of the accelerator API, named and defaulted as Cyborg's:
device profiles are read by project readers and written by admins;
accelerator requests are created and read within their project; binding,
unbinding and deleting by instance are for the service role (what the
conductors and computes do) or an admin; devices and deployables are read
by admins. noauth2 callers get no implied roles, so a member counts as a
reader here.
"""

from oslo_policy import policy

ADMIN = 'role:admin'
SERVICE_OR_ADMIN = 'role:service or role:admin'
PROJECT_READER = '(role:reader or role:member) and project_id:%(project_id)s'
PROJECT_MEMBER = 'role:member and project_id:%(project_id)s'
READER_OR_ADMIN = '(%s) or %s' % (PROJECT_READER, SERVICE_OR_ADMIN)
MEMBER_OR_ADMIN = '(%s) or %s' % (PROJECT_MEMBER, SERVICE_OR_ADMIN)

DP = 'cyborg:device_profile:%s'
ARQ = 'cyborg:arq:%s'
DEVICE = 'cyborg:device:%s'
DEPLOYABLE = 'cyborg:deployable:%s'


def _rule(name, check_str, description, ops):
    return policy.DocumentedRuleDefault(
        name=name,
        check_str=check_str,
        description=description,
        operations=[{'method': m, 'path': p} for m, p in ops],
        scope_types=['project'],
    )


_DPS = '/v2/device_profiles'
_ARQS = '/v2/accelerator_requests'
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
        SERVICE_OR_ADMIN,
        'Bind or unbind accelerator requests.',
        [('PATCH', _ARQS)],
    ),
    _rule(
        ARQ % 'delete',
        MEMBER_OR_ADMIN,
        'Delete accelerator requests by uuid.',
        [('DELETE', _ARQS + '?arqs=')],
    ),
    _rule(
        ARQ % 'delete_by_instance',
        SERVICE_OR_ADMIN,
        'Delete the accelerator requests of an instance.',
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
]


def list_rules():
    """For oslopolicy-sample-generator and the enforcer."""
    return RULES
