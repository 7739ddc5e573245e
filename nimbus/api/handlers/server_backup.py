"""``createBackup`` (``POST /servers/{id}/action``, Nova's
``os_compute_api:os-create-backup``): a snapshot of the server into a new
private image of its project, typed as a backup (``image_type`` backup,
``backup_type`` from the body, ``instance_uuid``), and the server's older
backups of that type beyond ``rotation`` deleted.

The image exists (active, as every image record this API keeps) once the
action is accepted, so the rotation happens then: the newest ``rotation``
backups of the type stay, the new one included; ``rotation`` 0 keeps none,
as Nova, whose compute rotates after the upload, ends. The compute runs
the snapshot in task ``image_backup`` (compute RPC 1.6,
``backup_instance``). A server booted from a volume has no image to back
up in Nova; Nimbus has no volumes, so every server can be backed up.
"""

from oslo_log import log as logging
from oslo_utils import uuidutils

from nimbus.api import policies_server_actions as policies
from nimbus.api import util
from nimbus.api.handlers import action_steps
from nimbus.api.objects import snapshots

LOG = logging.getLogger(__name__)


def create_backup(req, resp, server_id, value):
    record = action_steps.server_for(req, server_id, policies.CREATE_BACKUP)
    deps = util.deps(req)
    if not deps.compute_api(record['cell']).takes_backups():
        raise util.conflict(
            'The computes are capped below compute RPC 1.6 ([upgrade_levels]'
            ' compute): they cannot back servers up yet.'
        )
    rotation = int(value['rotation'])
    backup_type = value['backup_type']
    image_id = uuidutils.generate_uuid()

    def make_image():
        snapshots.create(
            deps.api_db,
            record,
            image_id,
            value,
            image_type='backup',
            extra={'backup_type': backup_type},
        )
        deleted = snapshots.rotate(
            deps.api_db, record['uuid'], backup_type, rotation
        )
        if deleted:
            LOG.info(
                'createBackup of %s: rotation %d of %s backups deleted %s',
                record['uuid'],
                rotation,
                backup_type,
                ', '.join(deleted),
            )

    action_steps.begin_and_cast(
        req,
        record,
        'createBackup',
        'createBackup',
        'createBackup',
        lambda api, ctx, host, uuid, rid: api.backup_instance(
            ctx, host, uuid, rid, image_id
        ),
        before_cast=make_image,
    )
    action_steps.image_accepted(req, resp, image_id)


ACTIONS = {'createBackup': create_backup}
