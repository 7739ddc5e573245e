"""GET /limits: the project's absolute limits and what it uses of them.

There are no rate limits (``rate`` is always empty, as in Nova since the
v2.1 API). Fields per microversion follow Nova: the network proxies go at
2.36, ``maxImageMeta`` at 2.39, the personality limits at 2.57.
"""

from nimbus.api import policies
from nimbus.api import util
from nimbus.api.handlers import quota_sets
from nimbus.api.objects import quotas
from nimbus.api.schemas import quotas as schema

# absolute field -> quota resource
MAX_FIELDS = {
    'maxTotalInstances': 'instances',
    'maxTotalCores': 'cores',
    'maxTotalRAMSize': 'ram',
    'maxServerMeta': 'metadata_items',
    'maxImageMeta': 'metadata_items',
    'maxPersonality': 'injected_files',
    'maxPersonalitySize': 'injected_file_content_bytes',
    'maxTotalKeypairs': 'key_pairs',
    'maxServerGroups': 'server_groups',
    'maxServerGroupMembers': 'server_group_members',
    'maxSecurityGroups': 'security_groups',
    'maxSecurityGroupRules': 'security_group_rules',
    'maxTotalFloatingIps': 'floating_ips',
}
USED_FIELDS = {
    'totalInstancesUsed': 'instances',
    'totalCoresUsed': 'cores',
    'totalRAMUsed': 'ram',
    'totalServerGroupsUsed': 'server_groups',
    'totalSecurityGroupsUsed': None,
    'totalFloatingIpsUsed': None,
}
REMOVED = [
    (
        (2, 36),
        (
            'maxSecurityGroups',
            'maxSecurityGroupRules',
            'maxTotalFloatingIps',
            'totalSecurityGroupsUsed',
            'totalFloatingIpsUsed',
        ),
    ),
    ((2, 39), ('maxImageMeta',)),
    ((2, 57), ('maxPersonality', 'maxPersonalitySize')),
]


def fields(version):
    """The absolute fields a response at ``version`` has."""
    names = set(MAX_FIELDS) | set(USED_FIELDS)
    for since, removed in REMOVED:
        if version >= since:
            names.difference_update(removed)
    return names


def index(req, resp):
    params = util.query(req, schema.LIMITS_QUERY)
    ctx = util.ctx(req)
    project_id = params.get('tenant_id') or ctx.project_id
    util.authorize(req, policies.LIMITS, {'project_id': ctx.project_id})
    if project_id != ctx.project_id:
        util.authorize(
            req, policies.LIMITS_OTHER_PROJECT, {'project_id': project_id}
        )
    deps = util.deps(req)
    limits = quotas.project_limits(deps.conf, deps.api_db, project_id)
    used = quota_sets.count_usage(req, project_id)
    absolute = {}
    for name in fields(util.version(req)):
        if name in MAX_FIELDS:
            absolute[name] = limits[MAX_FIELDS[name]]
        else:
            resource = USED_FIELDS[name]
            absolute[name] = used.get(resource, 0) if resource else 0
    resp.media = {'limits': {'rate': [], 'absolute': absolute}}
