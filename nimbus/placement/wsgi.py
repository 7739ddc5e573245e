"""The placement WSGI application.

``make_app(conf)`` migrates the database (unless disabled), syncs the
standard resource classes (os-resource-classes) and traits (os-traits) and
returns the WSGI callable. WSGI servers (gunicorn, uWSGI) serve it as
``nimbus.wsgi.placement:application`` (:mod:`nimbus.wsgi`).
"""

from oslo_log import log as logging
from oslo_middleware import cors
from sqlalchemy import exc as sa_exc
import tenacity

from nimbus.common import policy
from nimbus.common import wsgi
from nimbus.common.db import options as db_options
from nimbus.common.wsgi import middleware as wsgi_middleware
from nimbus.placement import db as placement_db
from nimbus.placement import handler
from nimbus.placement import openapi
from nimbus.placement import policies
from nimbus.placement.handlers import root
from nimbus.placement.objects import base
from nimbus.placement.objects import resource_class
from nimbus.placement.objects import snapshot
from nimbus.placement.objects import trait

LOG = logging.getLogger(__name__)


def _sync_standard(conn):
    resource_class.sync_standard(conn)
    trait.sync_standard(conn)


def make_state(conf):
    url = db_options.service_database_url(
        conf, 'placement_database', placement_db.sync
    )
    pdb = base.PlacementDB(
        url, pool=db_options.pool_options(conf.placement_database)
    )
    # Another process starting at the same time may insert the same
    # standard names first: read them again and go on.
    tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(sa_exc.IntegrityError),
        stop=tenacity.stop_after_attempt(5),
        reraise=True,
    )(pdb.write, _sync_standard)
    enforcer = policy.Enforcer(conf, policies.RULES)
    return handler.State(conf, pdb, snapshot.SnapshotCache(pdb), enforcer)


def make_app(conf, auth_strategy=None, keystone_middleware=None):
    """The placement WSGI app for ``conf`` (a registered ConfigOpts).

    ``keystone_middleware(app, conf)`` replaces keystonemiddleware's
    auth_token when ``[api] auth_strategy`` is keystone (for tests)."""
    state = make_state(conf)
    app = wsgi.build_app(
        handler.routes(state) + openapi.ROUTES,
        auth_strategy=auth_strategy or conf.api.auth_strategy,
        service_type='placement',
        min_version=root.MIN_VERSION,
        max_version=root.MAX_VERSION,
        error_style='placement',
        public_paths=('/', openapi.PATH),
        request_id_headers=('x-openstack-request-id',),
        keystone_conf=conf,
        keystone_middleware=keystone_middleware,
        max_body_size=conf.wsgi.max_request_body_size,
        max_query_length=conf.wsgi.max_query_string_length,
        max_list_length=conf.wsgi.max_request_list_length,
    )
    server_error_body = app.error_body
    app = _placement_headers(
        app, (auth_strategy or conf.api.auth_strategy) == 'noauth2'
    )
    if conf.cors.allowed_origin:
        # oslo.middleware answers preflight OPTIONS and sets the
        # access-control-* headers from [cors], before authentication, as
        # in Placement's pipeline.
        app = cors.CORS(app, conf)
    # What the HTTP server refuses itself is answered in Placement's JSON
    # error shape too (see nimbus.common.wsgi.server).
    app.error_body = _server_error_body(server_error_body)
    # For the callers in this process that write without a request
    # (nimbus.placement.direct.tree_writer).
    app.placement_state = state
    return app


def _server_error_body(body):
    """``body(status, detail)`` with Placement's words for the one
    refusal it words itself: a Content-Length that is not an integer
    (cheroot refuses it as malformed before the app runs)."""

    def placement_body(status, detail):
        words = detail.lower()
        if (
            status == 400
            and 'content-length' in words
            and 'malformed' in words
        ):
            detail = handler.CONTENT_LENGTH_NOT_INTEGER
        return body(status, detail)

    return placement_body


def _is_integer(value):
    try:
        int(value)
    except ValueError:
        return False
    return True


def _request_as_placement(environ, noauth):
    """Two request details as Placement 16 reads them, before the
    framework does. A ``Content-Length`` that is not an integer is set
    aside for the handler's 400 (the framework would refuse it in its own
    words). With noauth2, an ``X-Project-Id`` header names the request's
    project, as in Placement's noauth middleware, whose context prefers
    that header to the project in the token (``user[:project]``); a
    system-scoped request still has none."""
    length = environ.get('CONTENT_LENGTH')
    if length and not _is_integer(length):
        environ[handler.BAD_CONTENT_LENGTH] = length
        environ['CONTENT_LENGTH'] = ''
    if noauth:
        project = environ.get('HTTP_X_PROJECT_ID')
        token = environ.get('HTTP_X_AUTH_TOKEN')
        if (
            project
            and token
            and not environ.get('HTTP_OPENSTACK_SYSTEM_SCOPE')
        ):
            user = token.partition(':')[0]
            environ['HTTP_X_AUTH_TOKEN'] = '%s:%s' % (user, project)


def _placement_headers(app, noauth=False):
    """Reads the request as Placement does (:func:`_request_as_placement`)
    and gives the answer two header details of Placement 16: its 201s
    without a body carry
    no content-type (Falcon adds its default media type to them; 204s it
    leaves alone), and its errors raised outside the handlers' own error
    handling carry no ``vary`` (:data:`handler.BARE_ERROR`, an unknown
    route), those of a microversion it cannot agree on no version header
    either."""

    def filtered(environ, start_response):
        def start(status, headers, exc_info=None):
            code = status[:3]
            if code == '201' and ('content-length', '0') in headers:
                headers = [h for h in headers if h[0] != 'content-type']
            elif code >= '400':
                if environ.get(wsgi_middleware.VERSION_UNKNOWN):
                    # no version agreed: Placement names none
                    headers = [
                        h
                        for h in headers
                        if h[0].lower()
                        not in ('vary', 'openstack-api-version')
                    ]
                elif environ.get(handler.BARE_ERROR) or environ.get(
                    wsgi_middleware.ROUTE_NOT_FOUND
                ):
                    headers = [h for h in headers if h[0].lower() != 'vary']
            return start_response(status, headers, exc_info)

        _request_as_placement(environ, noauth)
        return app(environ, start)

    return filtered
