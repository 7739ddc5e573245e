"""/os-quota-sets: a project's limits, their usage, the defaults; and
/os-quota-class-sets (the ``default`` class)."""

from nimbus.api import policies
from nimbus.api import util
from nimbus.api.objects import quota_usage
from nimbus.api.objects import quotas
from nimbus.api.schemas import quotas as schema
from nimbus.common.wsgi import errors
from nimbus.common.wsgi import json_body


def _limits_body(limits, names, ident=None):
    body = {name: limits[name] for name in names}
    if ident is not None:
        body['id'] = ident
    return body


def count_usage(req, project_id):
    try:
        return quota_usage.project_usage(
            util.deps(req), util.ctx(req), project_id
        )
    except quota_usage.UsageUnavailable as exc:
        raise errors.HTTPError(
            503, 'Quota usage could not be counted: %s' % exc
        ) from exc


def _target(project_id):
    return {'project_id': project_id}


def _as_limits(values, field_names):
    """``{resource: int}`` from validated strings or integers."""
    limits = {}
    for name in field_names:
        if name not in values:
            continue
        value = int(values[name])
        if value < -1:
            raise util.bad_request(
                'Invalid input for field/attribute %s. Value: %s. %s is '
                'less than the minimum of -1' % (name, values[name], value)
            )
        limits[name] = value
    return limits


def _send_limits(req, resp, limits, project_id):
    """The ``quota_set`` body of ``limits``, the resources of the
    request's microversion."""
    resp.media = {
        'quota_set': _limits_body(
            limits, quotas.resources(util.version(req)), project_id
        )
    }


def show(req, resp, project_id):
    util.authorize(req, policies.QUOTAS % 'show', _target(project_id))
    util.query(req, schema.SHOW_QUERY)
    deps = util.deps(req)
    limits = quotas.project_limits(deps.conf, deps.api_db, project_id)
    _send_limits(req, resp, limits, project_id)


def detail(req, resp, project_id):
    util.authorize(req, policies.QUOTAS % 'detail', _target(project_id))
    util.query(req, schema.SHOW_QUERY)
    deps = util.deps(req)
    limits = quotas.project_limits(deps.conf, deps.api_db, project_id)
    used = count_usage(req, project_id)
    body = {'id': project_id}
    for name in quotas.resources(util.version(req)):
        body[name] = {
            'limit': limits[name],
            'in_use': used.get(name, 0),
            'reserved': 0,
        }
    resp.media = {'quota_set': body}


def defaults(req, resp, project_id):
    util.authorize(req, policies.QUOTAS % 'defaults', _target(project_id))
    deps = util.deps(req)
    _send_limits(
        req, resp, quotas.defaults(deps.conf, deps.api_db), project_id
    )


def update(req, resp, project_id):
    util.authorize(req, policies.QUOTAS % 'update', _target(project_id))
    util.query(req, schema.SHOW_QUERY)
    version = util.version(req)
    names = quotas.resources(version)
    body = json_body(req, schema.quota_set_update(version))['quota_set']
    force = util.boolish(body.get('force', False), 'force')
    new = _as_limits(body, names)
    deps = util.deps(req)
    if not force:
        used = count_usage(req, project_id)
        for name, limit in sorted(new.items()):
            in_use = used.get(name, 0)
            if limit != -1 and limit < in_use:
                raise util.bad_request(
                    'Quota limit %d for %s must be greater than or equal to '
                    'already used and reserved %d.' % (limit, name, in_use)
                )
    quotas.set_project_limits(deps.api_db, project_id, new)
    limits = quotas.project_limits(deps.conf, deps.api_db, project_id)
    resp.media = {'quota_set': _limits_body(limits, names)}


def delete(req, resp, project_id):
    util.authorize(req, policies.QUOTAS % 'delete', _target(project_id))
    util.query(req, schema.SHOW_QUERY)
    quotas.delete_project_limits(util.deps(req).api_db, project_id)
    # Nova answers 202 with no body (Tempest's client refuses one).
    resp.status = 202


def class_show(req, resp, class_name):
    util.authorize(req, policies.QUOTA_CLASSES % 'show')
    deps = util.deps(req)
    limits = quotas.class_limits(deps.conf, deps.api_db, class_name)
    resp.media = {
        'quota_class_set': _limits_body(
            limits, schema.class_resources(util.version(req)), class_name
        )
    }


def class_update(req, resp, class_name):
    util.authorize(req, policies.QUOTA_CLASSES % 'update')
    if len(class_name) > 255:
        raise util.bad_request(
            'Quota class name is longer than 255 characters.'
        )
    version = util.version(req)
    names = schema.class_resources(version)
    body = json_body(req, schema.quota_class_update(version))
    new = _as_limits(body['quota_class_set'], names)
    deps = util.deps(req)
    quotas.set_class_limits(deps.api_db, class_name, new)
    limits = quotas.class_limits(deps.conf, deps.api_db, class_name)
    resp.media = {'quota_class_set': _limits_body(limits, names)}
