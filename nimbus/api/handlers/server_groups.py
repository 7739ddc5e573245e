"""/os-server-groups: affinity, anti-affinity and their soft variants."""

from oslo_log import log as logging

from nimbus.api import policies
from nimbus.api import scheduler_cache
from nimbus.api import util
from nimbus.api.objects import quota_usage
from nimbus.api.objects import server_groups as group_obj
from nimbus.api.schemas import common
from nimbus.common.objects import ServerGroupInfo
from nimbus.common.wsgi import errors
from nimbus.common.wsgi import json_body

LOG = logging.getLogger(__name__)

POLICIES = ['affinity', 'anti-affinity', 'soft-affinity', 'soft-anti-affinity']

CREATE_LEGACY = {
    'type': 'object',
    'properties': {
        'server_group': {
            'type': 'object',
            'properties': {
                'name': common.NAME,
                'policies': {
                    'type': 'array',
                    'minItems': 1,
                    'maxItems': 1,
                    'items': {'type': 'string', 'enum': POLICIES},
                },
            },
            'required': ['name', 'policies'],
            'additionalProperties': False,
        }
    },
    'required': ['server_group'],
    'additionalProperties': False,
}

CREATE_V264 = {
    'type': 'object',
    'properties': {
        'server_group': {
            'type': 'object',
            'properties': {
                'name': common.NAME,
                'policy': {'type': 'string', 'enum': POLICIES},
                'rules': {
                    'type': 'object',
                    'properties': {
                        'max_server_per_host': {
                            'type': ['integer', 'string'],
                            'pattern': '^[0-9]+$',
                            'minimum': 1,
                        }
                    },
                    'additionalProperties': False,
                },
            },
            'required': ['name', 'policy'],
            'additionalProperties': False,
        }
    },
    'required': ['server_group'],
    'additionalProperties': False,
}

LIST_QUERY = {
    'type': 'object',
    'properties': dict(common.PAGING, **{'all_projects': {'type': 'string'}}),
}


def view(req, group):
    version = util.version(req)
    body = {
        'id': group['uuid'],
        'name': group['name'],
        'members': group['members'],
    }
    if version >= (2, 64):
        body['policy'] = group['policy']
        body['rules'] = group['rules'] or {}
    else:
        body['policies'] = [group['policy']]
        body['metadata'] = {}
    if version >= (2, 13):
        body['project_id'] = group['project_id']
        body['user_id'] = group['user_id']
    return body


def _target(group):
    return {'project_id': group['project_id'], 'user_id': group['user_id']}


def _get(req, group_id, rule):
    try:
        group = group_obj.get(util.deps(req).api_db, group_id)
    except group_obj.GroupNotFound as exc:
        raise util.not_found('Instance group', group_id) from exc
    if not util.can(req, rule, _target(group)):
        if group['project_id'] == util.ctx(req).project_id:
            # Your project's group, which your roles may not touch.
            util.authorize(req, rule, _target(group))
        # Another project's group does not exist, as far as you know.
        raise util.not_found('Instance group', group_id)
    return group


def index(req, resp):
    util.authorize(req, policies.GROUPS % 'index')
    params = util.query(req, LIST_QUERY)
    project_id = util.ctx(req).project_id
    if 'all_projects' in params and util.boolish(
        params['all_projects'] or 'true', 'all_projects'
    ):
        util.authorize(req, policies.GROUPS % 'index:all_projects')
        project_id = None
    groups = group_obj.list_all(util.deps(req).api_db, project_id)
    groups, _more = util.page(
        groups, lambda g: g['uuid'], params, util.limit_of(req, params)
    )
    resp.media = {'server_groups': [view(req, g) for g in groups]}


def show(req, resp, group_id):
    group = _get(req, group_id, policies.GROUPS % 'show')
    resp.media = {'server_group': view(req, group)}


def create(req, resp):
    util.authorize(req, policies.GROUPS % 'create')
    version = util.version(req)
    if version >= (2, 64):
        body = json_body(req, CREATE_V264)['server_group']
        policy, rules = body['policy'], dict(body.get('rules') or {})
        if rules and policy != 'anti-affinity':
            raise util.bad_request(
                "Only the 'anti-affinity' policy takes rules."
            )
        if 'max_server_per_host' in rules:
            rules['max_server_per_host'] = int(rules['max_server_per_host'])
            if rules['max_server_per_host'] < 1:
                raise util.bad_request(
                    'max_server_per_host must be at least 1.'
                )
    else:
        body = json_body(req, CREATE_LEGACY)['server_group']
        policy, rules = body['policies'][0], {}
        if policy.startswith('soft-') and version < (2, 15):
            raise util.bad_request(
                'Policy %s needs microversion 2.15.' % policy
            )
    ctx = util.ctx(req)
    try:
        quota_usage.check_server_group(util.deps(req), ctx, ctx.project_id)
    except quota_usage.QuotaExceeded as exc:
        raise errors.forbidden(str(exc)) from exc
    group = group_obj.create(
        util.deps(req).api_db,
        body['name'],
        policy,
        rules,
        ctx.project_id,
        ctx.user_id,
    )
    scheduler_cache.server_group_changed(
        req,
        ServerGroupInfo.from_primitive(
            {
                k: group[k]
                for k in ('uuid', 'name', 'policy', 'rules', 'members')
            }
        ),
    )
    resp.media = {'server_group': view(req, group)}


def delete(req, resp, group_id):
    group = _get(req, group_id, policies.GROUPS % 'delete')
    group_obj.delete(util.deps(req).api_db, group_id)
    scheduler_cache.server_group_deleted(req, group['uuid'])
    resp.status = 204
