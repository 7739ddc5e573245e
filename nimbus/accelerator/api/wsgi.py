"""The accelerator WSGI application.

``make_app(conf, binder=None, agent=None)`` migrates the database (unless
``[accelerator_database] sync_on_startup`` is off) and returns the WSGI
callable. ``application`` is for gunicorn: it reads the config file named
by ``NIMBUS_CONFIG_FILE`` (default ``/etc/nimbus/nimbus.conf``); binds it
records are programmed by the binder of a running nimbus-accelerator-api
process on the same database (it polls).
"""

import os

from oslo_log import log as logging

from nimbus.accelerator import db as accel_db
from nimbus.accelerator.api import handler
from nimbus.accelerator.api import policies
from nimbus.accelerator.api import versions
from nimbus.accelerator.api.handlers import root
from nimbus.accelerator.objects import base
from nimbus.common import policy
from nimbus.common import wsgi

LOG = logging.getLogger(__name__)


def make_adb(conf):
    url = conf.accelerator_database.connection
    if not url:
        raise ValueError('[accelerator_database] connection is not set')
    if conf.accelerator_database.sync_on_startup:
        accel_db.sync(url)
    return base.AcceleratorDB(url)


def make_app(
    conf,
    binder=None,
    agent=None,
    adb=None,
    auth_strategy=None,
    keystone_middleware=None,
):
    """The accelerator WSGI app for ``conf`` (a registered ConfigOpts).

    ``keystone_middleware(app, conf)`` replaces keystonemiddleware's
    auth_token when ``[api] auth_strategy`` is keystone (for tests)."""
    state = handler.State(
        conf,
        adb or make_adb(conf),
        policy.Enforcer(conf, policies.RULES),
        binder=binder,
        agent=agent,
    )
    app = wsgi.build_app(
        handler.routes(state),
        auth_strategy=auth_strategy or conf.api.auth_strategy,
        service_type='accelerator',
        min_version=root.MIN_VERSION,
        max_version=root.MAX_VERSION,
        error_style='accelerator',
        public_paths=handler.PUBLIC_PATHS,
        request_id_headers=('x-openstack-request-id',),
        keystone_conf=conf,
        keystone_middleware=keystone_middleware,
        max_body_size=conf.wsgi.max_request_body_size,
    )
    return versions.wrap(app, root.MIN_VERSION, root.MAX_VERSION)


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
