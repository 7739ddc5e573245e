"""The accelerator WSGI application.

``make_app(conf, binder=None, agent=None)`` migrates the database (unless
``[accelerator_database] sync_on_startup`` is off) and returns the WSGI
callable. WSGI servers (gunicorn, uWSGI) serve it as
``nimbus.wsgi.accelerator:application`` (:mod:`nimbus.wsgi`).
"""

from oslo_log import log as logging

from nimbus.accelerator import db as accel_db
from nimbus.accelerator.api import handler
from nimbus.accelerator.api import policies
from nimbus.accelerator.api import versions
from nimbus.accelerator.api.handlers import root
from nimbus.accelerator.objects import base
from nimbus.common import policy
from nimbus.common import wsgi
from nimbus.common.db import options as db_options

LOG = logging.getLogger(__name__)


def make_adb(conf):
    url = db_options.service_database_url(
        conf, 'accelerator_database', accel_db.sync
    )
    return base.AcceleratorDB(
        url, pool=db_options.pool_options(conf.accelerator_database)
    )


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
