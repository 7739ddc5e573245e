"""What shelve, unshelve and evacuate read and write before the
conductors act: the shelved image's id on the instance, the evacuation's
migration record (both in the transaction that takes the task, see
:func:`nimbus.api.objects.server_actions.begin`), and the compute
service of a host (is it up, which zone)."""

from nimbus.api.objects import aggregates as agg_obj
from nimbus.api.objects import images as image_obj
from nimbus.api.objects import services as service_obj
from nimbus.common.objects import migration as migration_obj
from nimbus.db import cell_instances
from nimbus.db import cell_migrations
from nimbus.db import cell_services

COMPUTE = 'nimbus-compute'
SHELVED_IMAGE = 'shelved_image_id'


def keep_image(uuid, image_id):
    """The ``then`` of a shelve's begin: the snapshot the unshelve spawns
    from (Nova keeps it in the system metadata)."""

    def apply(session):
        cell_instances.update_attributes(
            session, uuid, {SHELVED_IMAGE: image_id}
        )

    return apply


def drop_image(api_db, image_id):
    """The shelve could not be sent: its snapshot image goes."""
    try:
        image_obj.delete(api_db, image_id)
    except image_obj.ImageNotFound:
        pass


def new_evacuation(record, ctx, migration_uuid, host):
    """The ``then`` of an evacuate's begin: its migration, accepted (the
    requested host, if any, as ``dest_host``)."""

    def apply(session):
        cell_migrations.create(
            session,
            {
                'uuid': migration_uuid,
                'instance_uuid': record['uuid'],
                'migration_type': migration_obj.EVACUATION,
                'status': 'accepted',
                'source_compute': record.get('host'),
                'source_node': record.get('node'),
                'dest_host': host,
                'old_flavor': record.get('flavor'),
                'new_flavor': record.get('flavor'),
                'user_id': ctx.user_id,
                'project_id': ctx.project_id,
            },
        )

    return apply


def move_in_progress(cells, record):
    """The instance's migration under way (a dict), or None."""
    with cells.db(record['cell']).session() as session:
        return cell_migrations.in_progress(session, record['uuid'])


def is_up(cells, host, down_time, now):
    """Whether ``host``'s compute service is up (not forced down, seen
    within ``down_time`` seconds); None when the host has none."""
    cell = cells.cell_for_host(host)
    if cell is None:
        return None
    with cells.db(cell).session() as session:
        row = cell_services.by_host_binary(session, host, COMPUTE)
        if row is None:
            return None
        return service_obj.is_up(row, down_time, now)


def host_zones(api_db, conf, host):
    """The zones ``host`` is in (its aggregates', else the default)."""
    zones = agg_obj.zones_by_host(api_db)
    return zones.get(host) or {agg_obj.default_zone(conf)}


def known_zones(api_db, conf):
    known = set(agg_obj.zone_names(api_db))
    known.add(agg_obj.default_zone(conf))
    return known
