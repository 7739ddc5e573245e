"""Build a Falcon WSGI app from a route table (see package docstring)."""

import falcon
from oslo_log import log as logging
import orjson

from nimbus.common import secrets
from nimbus.common import exception
from nimbus.common.wsgi import errors
from nimbus.common.wsgi import microversion
from nimbus.common.wsgi import middleware
from nimbus.common.wsgi import validation

LOG = logging.getLogger(__name__)

_METHODS = ('GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'HEAD')


class _RouteResource:
    """Falcon resource whose responders are the route table's handlers.

    Handlers are stored as instance attributes, so Falcon calls them as
    plain functions ``handler(req, resp, **params)``. Every other method
    (OPTIONS and HEAD included: Falcon would otherwise answer OPTIONS
    itself) gets a 405 whose ``allow`` header lists the route's methods in
    table order, as OpenStack services answer.
    """

    def __init__(self, handlers):
        allowed = []
        for method, handler in handlers.items():
            method = method.upper()
            if method not in _METHODS:
                raise ValueError('unknown HTTP method %s' % method)
            setattr(self, 'on_' + method.lower(), handler)
            allowed.append(method)
        refuse = _method_not_allowed(', '.join(allowed))
        for method in falcon.constants.COMBINED_METHODS:
            if method not in allowed:
                setattr(self, 'on_' + method.lower().replace('-', '_'), refuse)


def _method_not_allowed(allow):
    def refuse(req, resp, **params):
        raise errors.HTTPError(
            405,
            'Method %s is not allowed on this resource.' % req.method,
            headers={'allow': allow},
        )

    return refuse


def _error_serializer(style):
    def serialize(req, resp, exc):
        status = getattr(exc, 'status_int', None) or int(
            str(exc.status).split()[0]
        )
        version = (
            None
            if req.context.get('version_unknown')
            else req.context.get('version')
        )
        body = style(
            status,
            exc.title,
            exc.description,
            getattr(exc, 'error_code', None),
            req.context.get('request_id'),
            version=version,
            version_limits=getattr(exc, 'version_limits', None),
        )
        resp.data = orjson.dumps(body)
        resp.content_type = falcon.MEDIA_JSON

    return serialize


def _handle_nimbus_exception(req, resp, exc, params):
    raise errors.HTTPError(
        exc.code, secrets.mask(exc.message), getattr(exc, 'error_code', None)
    )


def _handle_route_not_found(req, resp, exc, params):
    req.env[middleware.ROUTE_NOT_FOUND] = True
    raise errors.HTTPError(404, 'The resource could not be found.')


def _handle_unexpected(req, resp, exc, params):
    if isinstance(exc, falcon.HTTPError):
        raise exc
    if _is_stale(exc):
        # The row vanished or changed between reading and writing it (a
        # concurrent delete on a database with row locks): a conflict.
        LOG.info('Concurrent change on %s %s: %s', req.method, req.path, exc)
        raise errors.HTTPError(
            409,
            'The resource was changed or deleted '
            'by another request meanwhile; read it '
            'again and retry.',
        )
    if _is_data_error(exc):
        # A value the database cannot hold (out of range for its column,
        # too long, an invalid character for it) came from the request:
        # a schema let it through. The request is at fault, not the server.
        LOG.warning(
            'Value refused by the database on %s %s: %s',
            req.method,
            req.path,
            exc,
        )
        raise errors.HTTPError(
            400,
            'A value of the request is out of range '
            'or not valid for where it is stored.',
        )
    if _is_outage(exc):
        # The database is restarting, unreachable or out of connections:
        # the request may well succeed in a moment, so say so (a 500 would
        # tell the client the request itself broke the server).
        LOG.warning(
            'Database unavailable on %s %s: %s',
            req.method,
            req.path,
            secrets.mask(str(exc).split('\n')[0]),
        )
        raise errors.HTTPError(
            503,
            'A database this service needs is unavailable right now '
            '(%s); retry the request in a moment (request %s).'
            % (type(exc).__name__, req.context.get('request_id')),
            headers={'Retry-After': str(OUTAGE_RETRY_AFTER)},
        )
    LOG.exception('Unexpected error handling %s %s', req.method, req.path)
    raise errors.HTTPError(
        500,
        'An unexpected error prevented the server '
        'from fulfilling the request (request %s).'
        % req.context.get('request_id'),
    )


def _is_stale(exc):
    from sqlalchemy.orm import exc as orm_exc

    return isinstance(exc, orm_exc.StaleDataError)


# Seconds a client is told to wait (Retry-After) when a database is down.
OUTAGE_RETRY_AFTER = 5


def _is_outage(exc):
    """True for a database that cannot serve right now: its connection
    refused, dropped or invalidated, the pool exhausted, or the server
    busy (lock wait, shutdown). Not a schema that is missing a table,
    which SQLite also reports as an operational error. oslo.db's
    translations of these (the API and cell databases' engines raise
    them) count alike."""
    from oslo_db import exception as db_exc
    from sqlalchemy import exc as sa_exc

    if isinstance(exc, (db_exc.DBConnectionError, db_exc.DBDeadlock)):
        return True
    if isinstance(exc, db_exc.DBError) and exc.inner_exception is not None:
        exc = exc.inner_exception
    if isinstance(exc, (sa_exc.TimeoutError, sa_exc.DisconnectionError)):
        return True
    if not isinstance(exc, sa_exc.DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    if not isinstance(exc, (sa_exc.OperationalError, sa_exc.InterfaceError)):
        return False
    return 'no such table' not in str(exc) and 'no such column' not in str(exc)


def _is_data_error(exc):
    from oslo_db import exception as db_exc
    from sqlalchemy import exc as sa_exc

    return isinstance(exc, (sa_exc.DataError, db_exc.DBDataError))


def build_app(
    routes,
    *,
    auth_strategy,
    service_type,
    min_version,
    max_version,
    error_style,
    public_paths=('/',),
    request_id_headers=('x-openstack-request-id',),
    echo_version_headers=(),
    legacy_version_headers=(),
    keystone_conf=None,
    keystone_middleware=None,
    max_body_size=None,
    max_query_length=None,
    max_list_length=None,
):
    """The WSGI callable for a route table.

    ``error_style`` is ``'placement'`` or ``'compute'``. With
    ``auth_strategy='keystone'`` the app is wrapped in
    ``keystone_middleware(app, keystone_conf)`` (default: keystonemiddleware's
    auth_token, configured from ``keystone_conf``, an oslo.config object),
    except for ``public_paths``. Tests pass a stand-in that sets the
    identity headers as auth_token does. ``max_body_size`` (bytes) caps
    JSON request bodies (413 above it; ``[wsgi] max_request_body_size``),
    ``max_query_length`` query strings (400, ``[wsgi]
    max_query_string_length``) and ``max_list_length`` every list and
    object of a JSON body (400, ``[wsgi] max_request_list_length``).
    """
    negotiator = microversion.Negotiator(
        service_type, min_version, max_version, legacy_version_headers
    )
    app = falcon.App(
        middleware=[
            middleware.RequestId(request_id_headers),
            middleware.RequestLimits(
                max_body_size or 1048576,
                max_query_length or 8192,
                max_list_length or 1000,
            ),
            middleware.Auth(auth_strategy, public_paths),
            middleware.Microversion(negotiator, echo_version_headers),
        ]
    )
    app.req_options.auto_parse_qs_csv = False
    app.req_options.keep_blank_qs_values = True
    app.req_options.strip_url_path_trailing_slash = False
    json_handler = falcon.media.JSONHandler(
        dumps=orjson.dumps, loads=orjson.loads
    )
    app.resp_options.media_handlers[falcon.MEDIA_JSON] = json_handler
    app.req_options.media_handlers[falcon.MEDIA_JSON] = json_handler
    app.set_error_serializer(_error_serializer(errors.STYLES[error_style]))
    app.add_error_handler(Exception, _handle_unexpected)
    app.add_error_handler(exception.NimbusException, _handle_nimbus_exception)
    app.add_error_handler(falcon.HTTPRouteNotFound, _handle_route_not_found)
    for path, handlers in routes:
        app.add_route(path, _RouteResource(handlers))
    if auth_strategy == 'keystone':
        wsgi_app = _with_keystone(
            app,
            keystone_conf,
            set(public_paths),
            keystone_middleware or _auth_token,
        )
    else:

        def wsgi_app(environ, start_response):
            return app(environ, start_response)

    wsgi_app.error_body = error_body(error_style)
    return wsgi_app


def error_body(error_style):
    """``body(status, detail) -> bytes``: an error of this API's style
    for what the HTTP server itself refuses before the app runs (a
    malformed Content-Length, a request line too long); see
    :mod:`nimbus.common.wsgi.server`."""
    style = errors.STYLES[error_style]

    def body(status, detail):
        import http

        try:
            title = http.HTTPStatus(status).phrase
        except ValueError:
            title = str(status)
        return orjson.dumps(style(status, title, detail, None, None))

    return body


def _auth_token(app, conf):
    from keystonemiddleware import auth_token

    return auth_token.AuthProtocol(app, {'oslo_config_config': conf})


def _with_keystone(app, conf, public_paths, middleware):
    protected = middleware(app, conf)

    def dispatch(environ, start_response):
        if (environ.get('PATH_INFO') or '/') in public_paths:
            return app(environ, start_response)
        return protected(environ, start_response)

    return dispatch


def read_body(req):
    """The request body, at most the app's ``max_body_size`` bytes: a
    longer one (a chunked body has no length to refuse it by) is a 413."""
    limit = req.context.get('max_body')
    stream = req.bounded_stream
    if (
        req.content_length is None
        and 'chunked' in (req.get_header('Transfer-Encoding') or '').lower()
    ):
        # The server (cheroot, gunicorn) de-chunks wsgi.input: read it to
        # its end, never more than the limit and a byte.
        stream = req.stream
    if not limit:
        return stream.read()
    raw = stream.read(limit + 1)
    if len(raw) > limit:
        raise middleware.too_large(limit)
    return raw


def parse_json(req, raw, code=None, empty=None):
    """``raw`` (bytes) as JSON: 400 when malformed, and 400 naming
    ``[wsgi] max_request_list_length`` and where, when a list or an object
    in it is longer than the app allows. ``empty`` is the value of no
    body at all."""
    if not raw:
        return empty
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise errors.HTTPError(400, 'Malformed JSON: %s' % exc, code) from exc
    limit = req.context.get('max_list')
    # A list of n items takes at least 2n + 1 bytes of JSON ('[0,0]'), an
    # object more: a body shorter than 2 * (limit + 1) + 1 has none over.
    if limit and len(raw) > 2 * limit + 2:
        where = _longest_over(data, limit)
        if where is not None:
            raise errors.HTTPError(
                400,
                'A list or object of the request body has more than %d '
                'items (at %r), the limit set by %s.'
                % (limit, where or '/', middleware.LIST_LIMIT_OPTION),
                code,
            )
    return data


def _longest_over(data, limit):
    """The path ('a/0/b') of the first list or object of ``data`` with
    more than ``limit`` items, or None."""
    stack = [(data, '')]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            items = value.items()
        elif isinstance(value, list):
            items = enumerate(value)
        else:
            continue
        if len(value) > limit:
            return path
        for key, item in items:
            if isinstance(item, (dict, list)):
                stack.append(
                    (item, '%s/%s' % (path, key) if path else str(key))
                )
    return None


def require_json(req, code=None):
    """415 unless the request's body is declared JSON."""
    content_type = (req.content_type or '').split(';')[0].strip().lower()
    if content_type != 'application/json':
        raise errors.HTTPError(
            415,
            'The media type %s is not supported, use application/json'
            % (content_type or 'None'),
            code,
        )


def json_body(req, schema=None, code=None):
    """The request's JSON body, validated against ``schema``.

    Raises 415 for a non-JSON content type and 400, naming the failing
    field, for malformed JSON or a body that does not match.
    """
    require_json(req, code)
    data = parse_json(req, read_body(req), code)
    if schema is not None:
        validate(data, schema, code)
    return data


def validate(data, schema, code=None):
    """400 (with error ``code``) naming the field when ``data`` does not
    match ``schema``."""
    error = validation.first_error(schema, data)
    if error is not None:
        raise errors.HTTPError(
            400,
            'JSON does not validate: %s%s'
            % (error.message, validation.where(error)),
            code,
        )
