"""Helpers shared by the handlers: version gates, responses, query checks."""

import email.utils
import functools
import time

import falcon
from falcon.util import mediatypes
import orjson

from nimbus.common.wsgi import app as wsgi_app
from nimbus.common.wsgi import errors
from nimbus.common.wsgi import json_body  # noqa: F401  (re-exported)
from nimbus.common.wsgi import validation
from nimbus.placement import exception
from nimbus.placement.objects import resource_provider as rp_obj


def version(req):
    return req.context['version']


def since(major_minor, status=404):
    """Decorator: the handler does not exist below this microversion.

    Like Placement: 404 by default, 405 for a method added later to an
    existing route (DELETE of all inventories, 1.5).
    """

    def wrap(fn):
        @functools.wraps(fn)
        def handler(state, req, resp, **kw):
            if version(req) < major_minor:
                if status == 405:
                    raise errors.HTTPError(405, 'Method not allowed.')
                raise errors.HTTPError(404, 'The resource could not be found.')
            return fn(state, req, resp, **kw)

        return handler

    return wrap


def json_only(fn):
    """Decorator of the GET handlers that answer JSON: 406 when an
    ``Accept`` header is given and does not accept application/json
    (wildcards and q-values count; an unparsable header is ignored)."""

    @functools.wraps(fn)
    def handler(state, req, resp, **kw):
        accept = req.get_header('Accept')
        if accept and accept != 'application/json' and accept != '*/*':
            try:
                acceptable = (
                    mediatypes.quality('application/json', accept) > 0.0
                )
            except ValueError:
                acceptable = True
            if not acceptable:
                raise errors.HTTPError(
                    406,
                    'Only application/json is provided',
                    exception.UNDEFINED,
                )
        return fn(state, req, resp, **kw)

    return handler


_LAST_DATE = (None, None)


def http_date(ts=None):
    """RFC 7231 date of ``ts`` (default now); formatted once per second."""
    global _LAST_DATE
    sec = int(ts if ts is not None else time.time())
    last = _LAST_DATE
    if last[0] == sec:
        return last[1]
    value = email.utils.formatdate(sec, usegmt=True)
    _LAST_DATE = (sec, value)
    return value


def send(req, resp, body, status=200, last_modified=None):
    """Serialise ``body`` with orjson; cache headers from 1.15."""
    send_json(
        req,
        resp,
        None if body is None else orjson.dumps(body),
        status,
        last_modified,
    )


# A large body goes to the WSGI server in pieces of this size. cheroot's
# socket writer copies its whole pending buffer again after every partial
# send(), which for a body of megabytes in one piece is quadratic.
CHUNK = 256 * 1024
# The pieces of the last large body sent, ``(body, pieces)``: an answer
# kept with the snapshot (GET /allocation_candidates) is the very same
# bytes object again, and cutting megabytes into pieces copies them all.
_last_pieces = (None, ())


def _pieces(data):
    global _last_pieces
    body, pieces = _last_pieces
    if body is data:
        return pieces
    pieces = tuple(data[i : i + CHUNK] for i in range(0, len(data), CHUNK))
    _last_pieces = (data, pieces)
    return pieces


def send_json(req, resp, data, status=200, last_modified=None):
    """Send already serialised JSON bytes; cache headers from 1.15."""
    resp.status = falcon.code_to_http_status(status)
    if data is not None:
        if len(data) > CHUNK:
            resp.stream = iter(_pieces(data))
            resp.content_length = len(data)
        else:
            resp.data = data
        resp.content_type = 'application/json'
    if version(req) >= (1, 15) and req.method in ('GET', 'PUT', 'POST'):
        resp.set_header('cache-control', 'no-cache')
        if last_modified is not None:
            ts = last_modified.replace(
                tzinfo=__import__('datetime').timezone.utc
            ).timestamp()
        else:
            ts = None
        resp.set_header('last-modified', http_date(ts))


def no_content(resp):
    resp.status = falcon.HTTP_204


def url(req, path):
    """``path`` under the prefix the app is mounted at (``SCRIPT_NAME``,
    e.g. ``/placement`` behind a devstack-style front server)."""
    return req.root_path + path


def location(req, resp, path):
    """``location``: an absolute URL, as Placement's (WebOb) are."""
    resp.set_header('location', req.prefix + path)


def created(req, resp, path):
    """201 with no body and ``location`` (no cache headers, as Placement
    answers its empty 201s)."""
    resp.status = falcon.HTTP_201
    location(req, resp, path)


def params(req):
    """The query as ``{name: [values]}`` (repeated keys keep every value)."""
    out = {}
    for name, value in req.params.items():
        out[name] = value if isinstance(value, list) else [value]
    return out


def check_query(req, allowed):
    """400 for a query parameter not in ``allowed`` at this microversion."""
    extra = sorted(set(req.params) - set(allowed))
    if extra:
        # The JSON schema validator's own words, which clients look for.
        raise errors.HTTPError(
            400,
            'Invalid query string parameters: Additional properties '
            'are not allowed (%s %s unexpected). Failed validating '
            "'additionalProperties' in schema."
            % (
                ', '.join(repr(e) for e in extra),
                'was' if len(extra) == 1 else 'were',
            ),
            exception.UNDEFINED,
        )


def single(req, name):
    """A query parameter given once (the last value if repeated)."""
    value = req.params.get(name)
    if isinstance(value, list):
        return value[-1]
    return value


def validate(data, schema, what='JSON'):
    error = validation.first_error(schema, data, formats=False)
    if error is not None:
        raise errors.HTTPError(
            400,
            '%s does not validate: %s%s. %s'
            % (
                what,
                error.message,
                validation.where(error),
                failed_validating(error),
            ),
            exception.UNDEFINED,
        )


def failed_validating(error):
    """jsonschema's own line naming the failed keyword and where it is in
    the schema (``Failed validating 'pattern' in
    schema['properties']['name']``), which clients and tests look for."""
    path = ''.join('[%r]' % p for p in list(error.relative_schema_path)[:-1])
    return 'Failed validating %r in schema%s.' % (error.validator, path)


def require_json(req):
    """415 unless the request's body is declared JSON."""
    wsgi_app.require_json(req, exception.UNDEFINED)


def body(req, schema):
    """The request's JSON body validated against ``schema`` (415/400)."""
    data = json_body(req, None, exception.UNDEFINED)
    validate(data, schema)
    return data


def of_provider(state, uuid, read, *args, **kwargs):
    """``(generation, read(conn, provider id, *args, **kwargs))`` of the
    provider ``uuid``, in one read transaction (404 where there is none):
    what a provider's sub-resource listing answers with."""

    def load(conn):
        rp = rp_obj.get(conn, uuid)
        return rp['generation'], read(conn, rp['id'], *args, **kwargs)

    return state.pdb.read(load)


def send_of_provider(state, req, resp, uuid, key, read, *args, **kwargs):
    """Answer ``{key: what read found, "resource_provider_generation"}``
    (:func:`of_provider`): a provider's traits, usages, inventories or
    allocations."""
    gen, found = of_provider(state, uuid, read, *args, **kwargs)
    send(req, resp, {key: found, 'resource_provider_generation': gen})


def authorize(state, req, rule, target=None):
    try:
        state.policy_cache.authorize(req.context['ctx'], rule, target)
    except errors.HTTPError:
        req.env['nimbus.placement.bare_error'] = True  # handler.BARE_ERROR
        raise


class PolicyCache:
    """Remembers policy decisions for a second.

    oslo.policy re-checks its policy files (several ``stat`` calls) and
    inspects the check functions on every ``authorize``, a fifth of the
    time of a small request. A decision depends only on the rule, the
    credentials and the target, so it is kept for ``ttl`` seconds: a
    changed policy file takes effect within that time, as oslo.policy
    reloads it on the first check after expiry.
    """

    _FIELDS = (
        'user_id',
        'project_id',
        'is_admin',
        'system_scope',
        'domain_id',
        'user_domain_id',
        'project_domain_id',
        'is_admin_project',
        'service_user_id',
        'service_project_id',
    )

    def __init__(self, enforcer, ttl=1.0, size=4096):
        self.enforcer = enforcer
        self.ttl = ttl
        self.size = size
        self._decisions = {}
        self._expires = 0.0

    def _key(self, ctx, rule, target):
        creds = tuple(getattr(ctx, f, None) for f in self._FIELDS)
        roles = tuple(getattr(ctx, 'roles', None) or ())
        service_roles = tuple(getattr(ctx, 'service_roles', None) or ())
        tgt = (
            None
            if target is None
            else tuple(
                sorted(
                    (
                        k,
                        v
                        if isinstance(v, (str, int, type(None)))
                        else repr(v),
                    )
                    for k, v in target.items()
                )
            )
        )
        return rule, creds, roles, service_roles, tgt

    def authorize(self, ctx, rule, target=None):
        now = time.monotonic()
        if now >= self._expires or len(self._decisions) >= self.size:
            self._decisions = {}
            self._expires = now + self.ttl
        key = self._key(ctx, rule, target)
        denied = self._decisions.get(key)
        if denied is None:
            try:
                self.enforcer.authorize(ctx, rule, target)
                denied = False
            except errors.HTTPError:
                denied = True
            self._decisions[key] = denied
        if denied:
            raise errors.HTTPError(
                403, 'Policy does not allow %s to be performed.' % rule
            )


def normalize_uuid(value):
    value = value.lower()
    if '-' not in value and len(value) == 32:
        value = '%s-%s-%s-%s-%s' % (
            value[:8],
            value[8:12],
            value[12:16],
            value[16:20],
            value[20:],
        )
    return value
