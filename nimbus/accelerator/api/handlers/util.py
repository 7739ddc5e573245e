"""Helpers shared by the accelerator API's handlers."""

import contextlib

import orjson
from oslo_utils import uuidutils

from nimbus.accelerator.objects import base
from nimbus.common.wsgi import errors
from nimbus.common.wsgi import validation
from nimbus.common.wsgi import json_body  # noqa: F401  (re-exported)

PREFIX = '/accelerator'


def version(req):
    return req.context['version']


def ctx(req):
    """The request's context, with the roles of a service token sent along
    (``X-Service-Roles``: keystonemiddleware sets it, with
    ``X-Service-Identity-Status: Confirmed``, from a validated
    ``X-Service-Token`` and drops one a client sent; noauth2 trusts the
    client's headers, as it does ``X-Roles``)."""
    context = req.context['ctx']
    if 'service_roles_read' not in req.context:
        req.context['service_roles_read'] = True
        header = req.get_header('X-Service-Roles')
        keystone = req.get_header('X-Identity-Status') is not None
        if keystone and (
            req.get_header('X-Service-Identity-Status') != 'Confirmed'
        ):
            # behind auth_token: only roles of a validated service token
            header = None
        if header:
            context.service_roles = [
                r.strip().lower() for r in header.split(',') if r.strip()
            ]
    return context


def authorize(state, req, rule, project_id=None):
    context = ctx(req)
    target = {
        'project_id': project_id or context.project_id,
        'user_id': context.user_id,
    }
    state.enforcer.authorize(context, rule, target)


def may(state, req, rule, project_id=None):
    context = ctx(req)
    target = None
    if project_id is not None:
        target = {'project_id': project_id, 'user_id': context.user_id}
    return state.enforcer.check(context, rule, target)


def forbidden(detail):
    return errors.HTTPError(403, detail)


def send(resp, body, status=200):
    resp.status = status
    if body is None:
        return
    resp.data = orjson.dumps(body)
    resp.content_type = 'application/json'


def base_url(req):
    """``http://host:port[/accelerator]``: how the caller reached us."""
    prefix = (
        PREFIX
        if req.path.startswith(PREFIX + '/') or req.path == PREFIX
        else ''
    )
    return req.prefix.rstrip('/') + prefix


def link(req, noun, uuid):
    return [
        {'href': '%s/v2/%s/%s' % (base_url(req), noun, uuid), 'rel': 'self'}
    ]


def bad_request(detail):
    return errors.HTTPError(400, detail)


def not_found(detail):
    return errors.HTTPError(404, detail)


def conflict(detail):
    return errors.HTTPError(409, detail)


def query(req, allowed):
    """The query parameters, refusing unknown ones and repeated ones."""
    params = {}
    for name, value in req.params.items():
        if name not in allowed:
            raise bad_request(
                "Unknown query parameter '%s' (allowed: %s)"
                % (name, ', '.join(sorted(allowed)) or 'none')
            )
        if isinstance(value, list):
            raise bad_request(
                "Query parameter '%s' is given more than once" % name
            )
        params[name] = value
    return params


def uuid_param(name, value):
    if not uuidutils.is_uuid_like(value):
        raise bad_request("'%s' is not a valid UUID for %s" % (value, name))
    return value


@contextlib.contextmanager
def lookup(missing, what, name=None):
    """Turn ``missing`` (an object module's NotFound) raised inside the
    block into a 404: "``what`` ``name`` could not be found" (``name``:
    the exception's text when None)."""
    try:
        yield
    except missing as exc:
        name = exc if name is None else name
        raise not_found('%s %s could not be found' % (what, name)) from exc


def body_of(req, noun, record, keys, **extra):
    """The API's body of one ``record`` of the collection ``noun``: its
    ``keys``, then ``extra``, its self link and its times."""
    body = {key: record[key] for key in keys}
    body.update(extra)
    body['links'] = link(req, noun, record['uuid'])
    body.update(times(record))
    return body


def times(record):
    return {
        'created_at': base.isotime(record['created_at']),
        'updated_at': base.isotime(record['updated_at']),
    }


def validate(data, schema):
    """``data`` (already parsed) against ``schema``: a 400 naming the
    failing field, as :func:`json_body`'s."""
    error = validation.first_error(schema, data)
    if error is not None:
        raise bad_request(
            'JSON does not validate: %s%s'
            % (error.message, validation.where(error))
        )
    return data
