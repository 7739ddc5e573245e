"""The placement WSGI application.

``make_app(conf)`` migrates the database (unless disabled), syncs the
standard resource classes (os-resource-classes) and traits (os-traits) and
returns the WSGI callable. ``application`` is for gunicorn and other WSGI
servers: it reads the config file named by ``NIMBUS_CONFIG_FILE`` (default
``/etc/nimbus/nimbus.conf``).
"""

import os

from oslo_log import log as logging
from sqlalchemy import exc as sa_exc

from nimbus.common import policy
from nimbus.common import wsgi
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
    url = conf.placement_database.connection
    if not url:
        raise ValueError('[placement_database] connection is not set')
    if conf.placement_database.sync_on_startup:
        placement_db.sync(url)
    pdb = base.PlacementDB(url)
    for attempt in range(5):
        try:
            pdb.write(_sync_standard)
            break
        except sa_exc.IntegrityError:
            # Another process synced the same names concurrently.
            if attempt == 4:
                raise
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
        service_type='placement', min_version=root.MIN_VERSION,
        max_version=root.MAX_VERSION, error_style='placement',
        public_paths=('/', openapi.PATH),
        request_id_headers=('x-openstack-request-id',),
        keystone_conf=conf, keystone_middleware=keystone_middleware,
        max_body_size=conf.wsgi.max_request_body_size,
        max_query_length=conf.wsgi.max_query_string_length,
        max_list_length=conf.wsgi.max_request_list_length)
    return app


def _load_application():
    from nimbus.common import config
    path = os.environ.get('NIMBUS_CONFIG_FILE', '/etc/nimbus/nimbus.conf')
    conf = config.build_conf([], default_config_files=[path])
    logging.setup(conf, 'nimbus')
    return make_app(conf)


class _LazyApplication:
    """Builds the app on first request so importing this module is cheap."""

    def __init__(self):
        self._app = None

    def __call__(self, environ, start_response):
        if self._app is None:
            self._app = _load_application()
        return self._app(environ, start_response)


application = _LazyApplication()
