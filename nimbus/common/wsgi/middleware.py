"""The request middleware of every Nimbus WSGI app (in the order
:func:`nimbus.common.wsgi.app.build_app` stacks them): the request id,
the request limits, authentication and microversion negotiation."""

import os

from oslo_log import log as logging
from oslo_utils import uuidutils

from nimbus.common import context as nimbus_context
from nimbus.common.wsgi import access_log
from nimbus.common.wsgi import errors

LOG = logging.getLogger(__name__)
# The access line: LOG's line, written by oslo.log's formatter or, when
# the logging set-up allows, the same line without its per-record cost.
ACCESS_LOG = access_log.AccessLog(LOG)

BODY_LIMIT_OPTION = '[wsgi] max_request_body_size'
QUERY_LIMIT_OPTION = '[wsgi] max_query_string_length'
LIST_LIMIT_OPTION = '[wsgi] max_request_list_length'


def too_large(limit):
    return errors.HTTPError(
        413,
        'The request body is larger than %d bytes, the limit set by '
        '%s.' % (limit, BODY_LIMIT_OPTION),
    )


def new_request_id():
    """``req-`` and a random (version 4) UUID, as ``uuid.uuid4`` makes
    it (the same 16 random bytes, version and variant bits set), formatted
    directly: a quarter of the cost of building a ``UUID`` object."""
    h = os.urandom(16).hex()
    return 'req-%s-%s-4%s-%s%s-%s' % (
        h[:8],
        h[8:12],
        h[13:16],
        '89ab'[int(h[16], 16) & 3],
        h[17:20],
        h[20:],
    )


class RequestLimits:
    """What one request may cost, refused before a handler runs.

    A JSON body over ``body`` bytes by its Content-Length (413; a body
    without a length is held to the same limit by :func:`read_body`), a
    query string over ``query`` bytes (400). The longest list of a JSON
    body (``lists``) is checked when :func:`parse_json` reads it."""

    def __init__(self, body, query, lists):
        self.body = body
        self.query = query
        self.lists = lists

    def process_request(self, req, resp):
        req.context['max_body'] = self.body
        req.context['max_list'] = self.lists
        content_type = (req.content_type or '').lower()
        if 'json' in content_type and (req.content_length or 0) > self.body:
            raise too_large(self.body)
        if len(req.query_string or '') > self.query:
            raise errors.HTTPError(
                400,
                'The query string is longer than %d bytes, the limit '
                'set by %s.' % (self.query, QUERY_LIMIT_OPTION),
            )


class RequestId:
    def __init__(self, header_names):
        self.header_names = header_names

    def process_request(self, req, resp):
        req.context['request_id'] = new_request_id()
        inbound = req.get_header('X-Openstack-Request-Id')
        if (
            inbound
            and inbound.startswith('req-')
            and uuidutils.is_uuid_like(inbound[4:])
        ):
            # The caller's id: logged as the global request id, so one
            # request can be followed through every service it touched.
            req.context['global_request_id'] = inbound

    def process_response(self, req, resp, resource, req_succeeded):
        request_id = req.context.get('request_id')
        if request_id:
            for name in self.header_names:
                resp.set_header(name, request_id)
        # The access log: one line per request, carrying the request id
        # (the context set by Auth is this thread's current context).
        ACCESS_LOG.write(
            req.remote_addr,
            req.method,
            req.path,
            ('?' + req.query_string) if req.query_string else '',
            resp.status.split()[0]
            if isinstance(resp.status, str)
            else resp.status,
            req.context.get('version', '-'),
        )


# Set in the WSGI environ for middleware around the app (placement's
# header rules): no microversion could be agreed; no route matched.
VERSION_UNKNOWN = 'nimbus.version_unknown'
ROUTE_NOT_FOUND = 'nimbus.route_not_found'


# Keystone's default implied roles: admin implies member, member implies
# reader. A Keystone token lists them; noauth2 adds them the same way.
_IMPLIES = {'admin': 'member', 'member': 'reader'}


def _implied(roles):
    out = list(roles)
    for role in out:
        implied = _IMPLIES.get(role)
        if implied and implied not in out:
            out.append(implied)
    return out


class Auth:
    """Turns identity into a RequestContext.

    ``noauth2``: the token is ``user[:project]``; roles come from
    ``X-Roles`` (without the header: ``member``, Keystone's default
    assignment), with Keystone's implied roles added (admin implies
    member, member implies reader); the user ``admin`` gets the admin
    role;
    ``OpenStack-System-Scope: all`` makes a system-scoped context without a
    project. ``keystone``:
    keystonemiddleware (wrapped around the app) has validated the token and
    set ``X-Identity-Status: Confirmed``, ``X-User-Id``, ``X-Project-Id``
    and ``X-Roles``; any other identity status (a middleware configured
    with ``delay_auth_decision``, or none at all) is a 401.
    """

    def __init__(self, strategy, public_paths):
        self.strategy = strategy
        self.public_paths = set(public_paths)

    def process_request(self, req, resp):
        if req.path in self.public_paths and req.method == 'GET':
            req.context['ctx'] = nimbus_context.RequestContext(
                request_id=req.context['request_id'], overwrite=True
            )
            return
        if self.strategy == 'noauth2':
            token = req.get_header('X-Auth-Token')
            if not token:
                raise errors.HTTPError(
                    401,
                    'No X-Auth-Token header: noauth2 '
                    'expects "user[:project]".',
                )
            user, _, project = token.partition(':')
            project = project or user
            header = req.get_header('X-Roles')
            roles = [
                r.strip().lower()
                for r in (header or '').split(',')
                if r.strip()
            ]
            if header is None:
                # Keystone's default role assignment: a project member
                roles.append('member')
            if user == 'admin' and 'admin' not in roles:
                roles.append('admin')
            roles = _implied(roles)
            if req.get_header('OpenStack-System-Scope'):
                # as OpenStack's noauth middlewares: a system-scoped
                # token has no project
                project = None
        else:
            if req.get_header('X-Identity-Status') != 'Confirmed':
                raise errors.HTTPError(401, 'Authentication required.')
            user = req.get_header('X-User-Id')
            project = req.get_header('X-Project-Id')
            roles = [
                r.strip().lower()
                for r in (req.get_header('X-Roles') or '').split(',')
                if r.strip()
            ]
        req.context['ctx'] = nimbus_context.RequestContext(
            user_id=user,
            project_id=project,
            roles=roles,
            # keystonemiddleware's header for a system-scoped token (noauth2
            # takes it from the client); policies' scope_types check it
            system_scope=req.get_header('OpenStack-System-Scope') or None,
            is_admin='admin' in roles,
            request_id=req.context['request_id'],
            global_request_id=req.context.get('global_request_id'),
            overwrite=True,
        )


class Microversion:
    def __init__(self, negotiator, echo_headers):
        self.negotiator = negotiator
        self.echo_headers = echo_headers

    def process_request(self, req, resp):
        req.context['version'] = self.negotiator.min
        try:
            version = self.negotiator.negotiate_environ(req.env)
        except errors.HTTPError:
            # No version was agreed: the error body says so (see
            # errors.placement_body).
            req.context['version_unknown'] = True
            req.env[VERSION_UNKNOWN] = True
            raise
        req.context['version'] = version

    def process_response(self, req, resp, resource, req_succeeded):
        version = req.context.get('version')
        if version is None:
            return
        header = self.negotiator.response_header(version)
        resp.set_header('OpenStack-API-Version', header)
        for name, fmt in self.echo_headers:
            resp.set_header(name, fmt % version)
        resp.append_header('Vary', 'OpenStack-API-Version')
