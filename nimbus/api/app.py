"""Build the compute API's WSGI application with its dependencies."""

from nimbus.api import dashboard
from nimbus.api import handler
from nimbus.api import openapi
from nimbus.api import policies
from nimbus.api import policy_verdicts
from nimbus.api import util
from nimbus.api.versions import MAX_VERSION
from nimbus.api.versions import MIN_VERSION
from nimbus.common import cells as cell_queries
from nimbus.common.clients import accelerator as accelerator_client
from nimbus.common import wsgi

PUBLIC_PATHS = handler.PUBLIC_PATHS + openapi.PATHS


def _default_compute_api_factory(conf, cells):
    from nimbus.compute import rpcapi as compute_rpcapi

    cache = {}

    def factory(cell):
        api = cache.get(cell.uuid)
        if api is None:
            api = cache[cell.uuid] = compute_rpcapi.ComputeAPI(
                cells.transport(cell), conf=conf
            )
        return api

    return factory


def make_app(
    conf,
    *,
    api_db,
    cells,
    conductor_api,
    scheduler_api=None,
    compute_api_factory=None,
    placement=None,
    accelerator=None,
    decisions_transport=None,
    decision_hub=None,
):
    """The nimbus-api WSGI callable.

    - ``conf``: a ConfigOpts with every Nimbus option registered
      (``[api]``, ``[oslo_policy]``, ``[keystone_authtoken]`` are read).
    - ``api_db``: the API :class:`~nimbus.common.db.Database`.
    - ``cells``: a :class:`~nimbus.db.cells.CellDirectory`.
    - ``conductor_api``: has ``schedule_and_build_instances(ctx,
      request_spec, instance_uuids)`` (the super conductor's rpcapi).
    - ``scheduler_api``: has ``dry_run(ctx, request_spec)``; optional, the
      dry-run endpoint answers 503 without it.
    - ``compute_api_factory``: ``cell -> ComputeAPI`` on that cell's bus;
      by default a cached :class:`nimbus.compute.rpcapi.ComputeAPI` per cell.
    - ``placement``: a placement client; optional. With it, adding a host to
      an aggregate (or removing it) mirrors the membership onto the host's
      resource provider, so the scheduler can ask placement for the
      ``member_of`` an availability zone (as Nova's API does).
    - ``accelerator``: an accelerator API client (device profiles of
      flavors); by default one built from ``[accelerator_client]``, None
      without an endpoint.
    - ``decisions_transport``: the scheduler bus's notification transport,
      which the dashboard's event stream listens on (one listener per
      process, started by the first open page); or ``decision_hub``, a
      :class:`~nimbus.api.dashboard.stream.DecisionHub` (tests). Without
      either the stream answers 503. ``application.dashboard.stop()``
      stops the listener.
    """
    enforcer = policy_verdicts.Enforcer(conf, policies.RULES)
    deps = util.Deps(
        conf=conf,
        api_db=api_db,
        cells=cells,
        conductor_api=conductor_api,
        scheduler_api=scheduler_api,
        compute_api_factory=(
            compute_api_factory or _default_compute_api_factory(conf, cells)
        ),
        policy=enforcer,
        placement=placement,
        dashboard=dashboard.Dashboard(
            conf, decisions_transport, hub=decision_hub
        ),
        accelerator=(
            accelerator
            if accelerator is not None
            else accelerator_client.from_conf(conf)
        ),
        cell_queries=cell_queries.CellQueries(conf.api.cell_timeout),
    )
    app = wsgi.build_app(
        handler.ROUTES + openapi.ROUTES,
        auth_strategy=conf.api.auth_strategy,
        service_type='compute',
        min_version=MIN_VERSION,
        max_version=MAX_VERSION,
        error_style='compute',
        public_paths=PUBLIC_PATHS,
        request_id_headers=('x-openstack-request-id', 'x-compute-request-id'),
        echo_version_headers=(('X-OpenStack-Nova-API-Version', '%s'),),
        legacy_version_headers=('X-OpenStack-Nova-API-Version',),
        keystone_conf=conf,
        max_body_size=conf.wsgi.max_request_body_size,
        max_query_length=conf.wsgi.max_query_string_length,
        max_list_length=conf.wsgi.max_request_list_length,
    )

    def application(environ, start_response):
        environ[util.ENV_KEY] = deps
        return app(environ, start_response)

    application.deps = deps
    application.dashboard = deps.dashboard
    application.error_body = app.error_body
    return application
