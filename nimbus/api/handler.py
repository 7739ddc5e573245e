"""The compute API's route table: URL -> {method: handler}."""

from nimbus.api.handlers import aggregates
from nimbus.api.handlers import audit_log
from nimbus.api.handlers import availability_zones
from nimbus.api.handlers import capacity
from nimbus.api.handlers import cells
from nimbus.api.handlers import dashboard
from nimbus.api.handlers import external_events
from nimbus.api.handlers import flavor_access
from nimbus.api.handlers import flavors
from nimbus.api.handlers import hosts
from nimbus.api.handlers import hypervisor_search
from nimbus.api.handlers import hypervisors
from nimbus.api.handlers import identity
from nimbus.api.handlers import image_data
from nimbus.api.handlers import image_proxy
from nimbus.api.handlers import images
from nimbus.api.handlers import instance_actions
from nimbus.api.handlers import migrations
from nimbus.api.handlers import keypairs
from nimbus.api.handlers import limits
from nimbus.api.handlers import quota_sets
from nimbus.api.handlers import root
from nimbus.api.handlers import scheduler
from nimbus.api.handlers import scheduler_moves
from nimbus.api.handlers import server_actions
from nimbus.api.handlers import server_groups
from nimbus.api.handlers import server_migrations
from nimbus.api.handlers import servers
from nimbus.api.handlers import services
from nimbus.api.handlers import tenant_usage

V = '/v2.1'

ROUTES = [
    ('/', {'GET': root.versions}),
    (V, {'GET': root.version_v21}),
    (V + '/', {'GET': root.version_v21}),
    # The v2.0 entry of GET / (Nova's legacy API, not served beyond its
    # version document).
    ('/v2', {'GET': root.version_v20}),
    ('/v2/', {'GET': root.version_v20}),
    # servers
    (V + '/servers', {'GET': servers.index, 'POST': servers.create}),
    (V + '/servers/detail', {'GET': servers.detail}),
    (
        V + '/servers/{server_id}',
        {'GET': servers.show, 'PUT': servers.update, 'DELETE': servers.delete},
    ),
    (V + '/servers/{server_id}/action', {'POST': server_actions.action}),
    (
        V + '/servers/{server_id}/os-instance-actions',
        {'GET': instance_actions.index},
    ),
    (
        V + '/servers/{server_id}/os-instance-actions/{request_id}',
        {'GET': instance_actions.show},
    ),
    (V + '/servers/{server_id}/migrations', {'GET': server_migrations.index}),
    (
        V + '/servers/{server_id}/migrations/{migration_id}',
        {'GET': server_migrations.show, 'DELETE': server_migrations.delete},
    ),
    (
        V + '/servers/{server_id}/migrations/{migration_id}/action',
        {'POST': server_migrations.action},
    ),
    (
        V + '/servers/{server_id}/diagnostics',
        {'GET': instance_actions.diagnostics},
    ),
    # flavors
    # The image proxy (up to 2.35).
    (
        V + '/images/{image_id}',
        {'GET': image_proxy.show, 'DELETE': image_proxy.delete},
    ),
    (V + '/flavors', {'GET': flavors.index, 'POST': flavors.create}),
    (V + '/flavors/detail', {'GET': flavors.detail}),
    (
        V + '/flavors/{flavor_id}',
        {'GET': flavors.show, 'PUT': flavors.update, 'DELETE': flavors.delete},
    ),
    (
        V + '/flavors/{flavor_id}/os-extra_specs',
        {'GET': flavors.specs_index, 'POST': flavors.specs_create},
    ),
    (
        V + '/flavors/{flavor_id}/os-extra_specs/{key}',
        {
            'GET': flavors.specs_show,
            'PUT': flavors.specs_update,
            'DELETE': flavors.specs_delete,
        },
    ),
    # flavor access
    (
        V + '/flavors/{flavor_id}/os-flavor-access',
        {'GET': flavor_access.index},
    ),
    (V + '/flavors/{flavor_id}/action', {'POST': flavor_access.action}),
    # key pairs
    (V + '/os-keypairs', {'GET': keypairs.index, 'POST': keypairs.create}),
    (
        V + '/os-keypairs/{keypair_name}',
        {'GET': keypairs.show, 'DELETE': keypairs.delete},
    ),
    # services and hypervisors
    (V + '/os-services', {'GET': services.index}),
    (
        V + '/os-services/{service_id}',
        {'PUT': services.update, 'DELETE': services.delete},
    ),
    (V + '/os-migrations', {'GET': migrations.index}),
    (V + '/os-hypervisors', {'GET': hypervisors.index}),
    (V + '/os-hypervisors/detail', {'GET': hypervisors.detail}),
    (V + '/os-hypervisors/statistics', {'GET': hypervisors.statistics}),
    (V + '/os-hypervisors/{hypervisor_id}', {'GET': hypervisors.show}),
    (
        V + '/os-hypervisors/{hypervisor_id}/uptime',
        {'GET': hypervisors.uptime},
    ),
    # aggregates and zones
    (
        V + '/os-aggregates',
        {'GET': aggregates.index, 'POST': aggregates.create},
    ),
    (
        V + '/os-aggregates/{aggregate_id}',
        {
            'GET': aggregates.show,
            'PUT': aggregates.update,
            'DELETE': aggregates.delete,
        },
    ),
    (V + '/os-aggregates/{aggregate_id}/action', {'POST': aggregates.action}),
    (V + '/os-availability-zone', {'GET': availability_zones.index}),
    (V + '/os-availability-zone/detail', {'GET': availability_zones.detail}),
    # server groups
    (
        V + '/os-server-groups',
        {'GET': server_groups.index, 'POST': server_groups.create},
    ),
    (
        V + '/os-server-groups/{group_id}',
        {'GET': server_groups.show, 'DELETE': server_groups.delete},
    ),
    # external events
    (V + '/os-server-external-events', {'POST': external_events.create}),
    # scheduler explain (Nimbus)
    (V + '/os-scheduler/dry-run', {'POST': scheduler.dry_run}),
    (V + '/os-scheduler/move-dry-run', {'POST': scheduler_moves.move_dry_run}),
    (V + '/os-scheduler/records', {'GET': scheduler.records}),
    (V + '/os-scheduler/capacity', {'GET': capacity.capacity}),
    # quotas and limits
    (V + '/limits', {'GET': limits.index}),
    (
        V + '/os-quota-sets/{project_id}',
        {
            'GET': quota_sets.show,
            'PUT': quota_sets.update,
            'DELETE': quota_sets.delete,
        },
    ),
    (V + '/os-quota-sets/{project_id}/detail', {'GET': quota_sets.detail}),
    (V + '/os-quota-sets/{project_id}/defaults', {'GET': quota_sets.defaults}),
    (
        V + '/os-quota-class-sets/{class_name}',
        {'GET': quota_sets.class_show, 'PUT': quota_sets.class_update},
    ),
    # usage, and the host routes of older microversions
    (V + '/os-simple-tenant-usage', {'GET': tenant_usage.index}),
    (V + '/os-simple-tenant-usage/{project_id}', {'GET': tenant_usage.show}),
    (V + '/os-hosts', {'GET': hosts.index}),
    (V + '/os-hosts/{host_name}', {'GET': hosts.show, 'PUT': hosts.update}),
    (V + '/os-hosts/{host_name}/reboot', {'GET': hosts.reboot}),
    (V + '/os-hosts/{host_name}/shutdown', {'GET': hosts.shutdown}),
    (V + '/os-hosts/{host_name}/startup', {'GET': hosts.startup}),
    (
        V + '/os-hypervisors/{hypervisor_id}/search',
        {'GET': hypervisor_search.search},
    ),
    (
        V + '/os-hypervisors/{hypervisor_id}/servers',
        {'GET': hypervisor_search.servers},
    ),
    (V + '/os-instance_usage_audit_log', {'GET': audit_log.index}),
    (
        V + '/os-instance_usage_audit_log/{before_timestamp}',
        {'GET': audit_log.show},
    ),
    # cells (Nimbus)
    (V + '/os-cells', {'GET': cells.index}),
]

# The Glance-shaped images API under the image endpoint's own path
# (/image/v2/...), with its versions document at /image, /image/ and
# /image/v2; its routes are mounted at the root too (/v2/images...), but
# GET /v2/ is compute's v2.0 version document, as in Nova, so the image
# endpoint of the catalog is <nimbus-api>/image.
IMAGE_ROUTES = [
    ('/v2/images', {'GET': images.index, 'POST': images.create}),
    (
        '/v2/images/{image_id}',
        {
            'GET': images.show,
            'PUT': images.update,
            'PATCH': images.patch,
            'DELETE': images.delete,
        },
    ),
    ('/v2/images/{image_id}/tasks', {'GET': images.tasks}),
    (
        '/v2/images/{image_id}/file',
        {'GET': image_data.download, 'PUT': image_data.upload},
    ),
]
IMAGE_VERSION_PATHS = tuple(
    image_data.PREFIX + path for path in ('', '/', '/v2', '/v2/')
)

ROUTES += IMAGE_ROUTES
ROUTES += [
    (path, {'GET': image_data.versions}) for path in IMAGE_VERSION_PATHS
]
ROUTES += [
    (image_data.PREFIX + path, handlers) for path, handlers in IMAGE_ROUTES
]

# An identity version document for noauth2 clouds (see handlers.identity).
ROUTES += [(path, {'GET': identity.version}) for path in identity.PATHS]
ROUTES += [
    (identity.PROJECTS, {'GET': identity.list_projects}),
    (identity.PROJECT, {'GET': identity.show_project}),
]

# The dashboard (Nimbus): its page and assets need no token, its data does.
ROUTES += dashboard.ROUTES

# Version documents need no token.
PUBLIC_PATHS = (
    ('/', V, V + '/', '/v2', '/v2/')
    + IMAGE_VERSION_PATHS
    + identity.PATHS
    + dashboard.PUBLIC_PATHS
)
