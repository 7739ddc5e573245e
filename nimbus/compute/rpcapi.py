"""RPC client of nimbus-compute (topic ``compute``, ``server=<host>``).

Messages go over the bus of the compute's cell; the caller builds this
client with that cell's transport.

Version history
  1.0  build_and_run_instance, terminate_instance, external_instance_event.
  1.1  get_host_uptime (a call; os-hypervisors/{id}/uptime).
  1.2  server actions that stay on the host (casts, each with the
       request id of its instance action): stop_instance,
       start_instance, reboot_instance, pause_instance,
       unpause_instance, suspend_instance, resume_instance,
       rescue_instance, unrescue_instance, rebuild_instance,
       set_admin_password, soft_delete_instance, restore_instance,
       snapshot_instance;
       calls get_console_output and get_diagnostics.
  1.3  resize and cold migrate (casts, each with the request id of its
       instance action and the Migration): prep_resize (destination,
       with its Selection and the alternates), resize_instance (source),
       finish_resize (destination), confirm_resize (source),
       revert_resize (destination), finish_revert_resize (source).
  1.4  shelve and evacuate (issue 24, section 2): casts shelve_instance
       and shelve_offload_instance; calls unshelve_instance and
       evacuate_instance (the super conductor waits for their outcome:
       it deletes the shelved image, ends the migration or undoes the
       claims).
  1.5  live migration (issue 24, section 2; nimbus.compute.rpcapi_live):
       calls check_can_live_migrate_destination, pre_live_migration and
       post_live_migration_at_destination (destination); casts
       live_migration, live_migration_abort and
       live_migration_force_complete (source),
       rollback_live_migration_at_destination (destination). A cap below
       1.5 (``[upgrade_levels] compute``) makes the API refuse
       os-migrateLive (409) rather than send what the computes cannot
       read.
  1.6  backup_instance (cast): the snapshot of createBackup, in task
       image_backup. A cap below 1.6 makes the API refuse createBackup
       (409).
  1.7  cross-cell resize and cold migrate (calls from the super
       conductor, Nova's snapshot-based resize names;
       nimbus.compute.rpcapi_cross_cell):
       prep_snapshot_based_resize_at_dest,
       finish_snapshot_based_resize_at_dest and
       revert_snapshot_based_resize_at_dest (destination);
       prep_snapshot_based_resize_at_source,
       confirm_snapshot_based_resize_at_source and
       finish_revert_snapshot_based_resize_at_source (source). A cap
       below 1.7 keeps every move in its cell.
  1.8  the cross-cell steps carry a server's accelerators (no new
       method or argument; sent as 1.8 for a move with a device profile
       or ARQs): prep_snapshot_based_resize_at_dest binds and awaits
       ARQs of the new flavor's device profile on the destination (the
       device providers from the migration's ``dest_device_mappings``),
       records them on the target cell's migration
       (``dest_accel_uuids``) and answers them as ``accel_uuids``;
       finish_snapshot_based_resize_at_dest spawns the guest with them.
       A cap below 1.8 keeps a server with accelerators in its cell.
"""

from nimbus.common import rpc
from nimbus.common.rpc import options as rpc_options
from nimbus.common.objects import selection as selection_obj
from nimbus.compute import rpcapi_cross_cell
from nimbus.compute import rpcapi_live

TOPIC = 'compute'
VERSION = '1.8'


class ComputeAPI(
    rpc.HostClients,
    rpcapi_live.LiveMigrationCalls,
    rpcapi_cross_cell.CrossCellCalls,
):
    topic = TOPIC
    version = VERSION

    def _version_cap(self):
        return rpc_options.version_cap(self._conf, 'compute')

    def _takes(self, version):
        """Whether the computes may be sent a message of ``version``
        (``(1, 5)``; a ``[upgrade_levels] compute`` cap below it says
        no)."""
        cap = rpc_options.version_cap(self._conf, 'compute')
        if not cap:
            return True
        return tuple(int(p) for p in cap.split('.')[:2]) >= version

    def takes_live_migrations(self):
        """Whether the computes may be sent live migrations (1.5)."""
        return self._takes((1, 5))

    def takes_backups(self):
        """Whether the computes may be sent createBackup (1.6)."""
        return self._takes((1, 6))

    def build_and_run_instance(
        self,
        ctxt,
        host,
        instance,
        request_spec,
        selection,
        host_list,
        accel_uuids=None,
    ):
        """Cast: build ``instance`` (an Instance) on ``host`` for
        ``request_spec`` (a RequestSpec).

        ``selection`` is the Selection whose allocation was claimed for this
        host; ``host_list`` holds the alternates (Selections) left for a
        reschedule. Idempotent: a copy that arrives while the compute builds
        the instance is dropped, one that arrives later finds it no longer
        building and does nothing.
        """
        self._client(host).prepare(version='1.0').cast(
            ctxt,
            'build_and_run_instance',
            instance=instance.to_primitive(),
            request_spec=request_spec.to_primitive(),
            selection=selection.to_primitive(),
            host_list=selection_obj.list_to_primitive(host_list),
            accel_uuids=accel_uuids or [],
        )

    def terminate_instance(self, ctxt, host, instance_uuid):
        """Cast: destroy the guest and free its allocations."""
        self._client(host).prepare(version='1.0').cast(
            ctxt, 'terminate_instance', instance_uuid=instance_uuid
        )

    def external_instance_event(self, ctxt, host, instance_uuid, events):
        """Cast: deliver external events (``accelerator-request-bound``),
        a list of InstanceEvents."""
        self._client(host).prepare(version='1.0').cast(
            ctxt,
            'external_instance_event',
            instance_uuid=instance_uuid,
            events=[event.to_primitive() for event in events],
        )

    def get_host_uptime(self, ctxt, host):
        """Call: the host's uptime string, as its virt driver tells it.
        Raises NotImplementedError when the driver cannot tell."""
        return (
            self._client(host)
            .prepare(version='1.1')
            .call(ctxt, 'get_host_uptime')
        )

    # The guest actions below are alike by design: this module is the only
    # place that names the compute's RPC methods, one method each.
    def _action(self, ctxt, host, method, instance_uuid, request_id, **more):
        self._client(host).prepare(version='1.2').cast(
            ctxt,
            method,
            instance_uuid=instance_uuid,
            request_id=request_id,
            **more,
        )

    def stop_instance(self, ctxt, host, instance_uuid, request_id):
        """Cast: power the guest off; the instance ends STOPPED."""
        self._action(ctxt, host, 'stop_instance', instance_uuid, request_id)

    def start_instance(self, ctxt, host, instance_uuid, request_id):
        """Cast: power the guest on; the instance ends ACTIVE."""
        self._action(ctxt, host, 'start_instance', instance_uuid, request_id)

    def reboot_instance(
        self, ctxt, host, instance_uuid, request_id, reboot_type
    ):
        """Cast: reboot the guest, ``reboot_type`` SOFT or HARD."""
        self._action(
            ctxt,
            host,
            'reboot_instance',
            instance_uuid,
            request_id,
            reboot_type=reboot_type,
        )

    def pause_instance(self, ctxt, host, instance_uuid, request_id):
        self._action(ctxt, host, 'pause_instance', instance_uuid, request_id)

    def unpause_instance(self, ctxt, host, instance_uuid, request_id):
        self._action(ctxt, host, 'unpause_instance', instance_uuid, request_id)

    def suspend_instance(self, ctxt, host, instance_uuid, request_id):
        self._action(ctxt, host, 'suspend_instance', instance_uuid, request_id)

    def resume_instance(self, ctxt, host, instance_uuid, request_id):
        self._action(ctxt, host, 'resume_instance', instance_uuid, request_id)

    def rescue_instance(
        self, ctxt, host, instance_uuid, request_id, rescue_image_ref
    ):
        """Cast: boot the guest from ``rescue_image_ref``."""
        self._action(
            ctxt,
            host,
            'rescue_instance',
            instance_uuid,
            request_id,
            rescue_image_ref=rescue_image_ref,
        )

    def unrescue_instance(self, ctxt, host, instance_uuid, request_id):
        self._action(
            ctxt, host, 'unrescue_instance', instance_uuid, request_id
        )

    def rebuild_instance(
        self,
        ctxt,
        host,
        instance_uuid,
        request_id,
        image_ref,
        preserve_ephemeral,
        power_on,
    ):
        """Cast: re-create the guest from ``image_ref``; it ends running
        (ACTIVE), or stopped without ``power_on``."""
        self._action(
            ctxt,
            host,
            'rebuild_instance',
            instance_uuid,
            request_id,
            image_ref=image_ref,
            preserve_ephemeral=bool(preserve_ephemeral),
            power_on=bool(power_on),
        )

    def set_admin_password(
        self, ctxt, host, instance_uuid, request_id, admin_password
    ):
        """Cast: set the guest's administrator password."""
        self._action(
            ctxt,
            host,
            'set_admin_password',
            instance_uuid,
            request_id,
            admin_password=admin_password,
        )

    def snapshot_instance(
        self, ctxt, host, instance_uuid, request_id, image_id
    ):
        """Cast: snapshot the guest into image ``image_id`` (made by the
        compute API); the server keeps its state."""
        self._action(
            ctxt,
            host,
            'snapshot_instance',
            instance_uuid,
            request_id,
            image_id=image_id,
        )

    def backup_instance(self, ctxt, host, instance_uuid, request_id, image_id):
        """Cast (1.6): snapshot the guest into the backup image
        ``image_id`` (made, and the older backups rotated, by the compute
        API); the server keeps its state."""
        self._client(host).prepare(version='1.6').cast(
            ctxt,
            'backup_instance',
            instance_uuid=instance_uuid,
            request_id=request_id,
            image_id=image_id,
        )

    def soft_delete_instance(self, ctxt, host, instance_uuid, request_id):
        """Cast: shut the guest down; the instance ends SOFT_DELETED."""
        self._action(
            ctxt, host, 'soft_delete_instance', instance_uuid, request_id
        )

    def restore_instance(self, ctxt, host, instance_uuid, request_id):
        """Cast: start a soft-deleted server's guest again; it ends
        ACTIVE."""
        self._action(ctxt, host, 'restore_instance', instance_uuid, request_id)

    def get_console_output(self, ctxt, host, instance_uuid, length=None):
        """Call: the guest's console log (the last ``length`` lines).
        Raises GuestNotFound (as a RemoteError) when the host runs no
        guest of it."""
        return (
            self._client(host)
            .prepare(version='1.2')
            .call(
                ctxt,
                'get_console_output',
                instance_uuid=instance_uuid,
                length=length,
            )
        )

    def get_diagnostics(self, ctxt, host, instance_uuid):
        """Call: the guest's diagnostics (Nova's 2.48 shape)."""
        return (
            self._client(host)
            .prepare(version='1.2')
            .call(ctxt, 'get_diagnostics', instance_uuid=instance_uuid)
        )

    # -- shelve and evacuate (1.4) -------------------------------------

    def shelve_instance(self, ctxt, host, instance_uuid, request_id, image_id):
        """Cast: snapshot the guest into ``image_id`` and power it off;
        the instance ends SHELVED, offloaded at once when the host's
        ``[DEFAULT] shelved_offload_time`` is 0."""
        self._client(host).prepare(version='1.4').cast(
            ctxt,
            'shelve_instance',
            instance_uuid=instance_uuid,
            request_id=request_id,
            image_id=image_id,
        )

    def shelve_offload_instance(self, ctxt, host, instance_uuid, request_id):
        """Cast: destroy the shelved guest and release its resources; the
        instance ends SHELVED_OFFLOADED with no host."""
        self._client(host).prepare(version='1.4').cast(
            ctxt,
            'shelve_offload_instance',
            instance_uuid=instance_uuid,
            request_id=request_id,
        )

    def unshelve_instance(
        self,
        ctxt,
        host,
        instance_uuid,
        request_id,
        image_id=None,
        selection=None,
        accel_uuids=None,
        timeout=None,
    ):
        """Call: start a SHELVED guest on ``host`` (``selection`` None), or
        spawn an offloaded one there from ``image_id`` on ``selection``'s
        claim; ``{'ok', 'error'}``."""
        return (
            self._client(host)
            .prepare(version='1.4', timeout=timeout)
            .call(
                ctxt,
                'unshelve_instance',
                instance_uuid=instance_uuid,
                request_id=request_id,
                image_id=image_id,
                selection=(
                    None if selection is None else selection.to_primitive()
                ),
                accel_uuids=accel_uuids or [],
            )
        )

    def evacuate_instance(
        self,
        ctxt,
        host,
        instance_uuid,
        request_id,
        migration,
        selection,
        power_on=True,
        accel_uuids=None,
        timeout=None,
    ):
        """Call: rebuild the instance on ``host`` (the destination chosen
        by the scheduler, ``selection``) for ``migration`` (a Migration of
        type evacuation), with the ARQs bound there; ``{'ok',
        'error'}``."""
        return (
            self._client(host)
            .prepare(version='1.4', timeout=timeout)
            .call(
                ctxt,
                'evacuate_instance',
                instance_uuid=instance_uuid,
                request_id=request_id,
                migration=migration.to_primitive(),
                selection=selection.to_primitive(),
                power_on=bool(power_on),
                accel_uuids=accel_uuids or [],
            )
        )

    # -- resize and cold migrate (1.3) ---------------------------------------

    def _move(
        self, ctxt, host, method, instance_uuid, request_id, migration, **more
    ):
        self._client(host).prepare(version='1.3').cast(
            ctxt,
            method,
            instance_uuid=instance_uuid,
            request_id=request_id,
            migration=migration.to_primitive(),
            **more,
        )

    def prep_resize(
        self,
        ctxt,
        host,
        instance_uuid,
        request_id,
        migration,
        selection,
        alternates,
    ):
        """Cast: the destination ``host`` checks the move (``selection``
        is its claim) and asks the source to resize; ``alternates``
        (Selections in the same cell) are tried if it cannot."""
        self._move(
            ctxt,
            host,
            'prep_resize',
            instance_uuid,
            request_id,
            migration,
            selection=selection.to_primitive(),
            host_list=selection_obj.list_to_primitive(alternates),
        )

    def resize_instance(
        self, ctxt, host, instance_uuid, request_id, migration
    ):
        """Cast: the source powers the guest off for the move and tells the
        destination to finish it."""
        self._move(
            ctxt, host, 'resize_instance', instance_uuid, request_id, migration
        )

    def finish_resize(self, ctxt, host, instance_uuid, request_id, migration):
        """Cast: the destination spawns the guest with the new flavor; the
        server ends VERIFY_RESIZE."""
        self._move(
            ctxt, host, 'finish_resize', instance_uuid, request_id, migration
        )

    def confirm_resize(self, ctxt, host, instance_uuid, request_id, migration):
        """Cast: the source drops the old guest and its allocation."""
        self._move(
            ctxt, host, 'confirm_resize', instance_uuid, request_id, migration
        )

    def revert_resize(self, ctxt, host, instance_uuid, request_id, migration):
        """Cast: the destination drops the new guest and hands the server
        back to the source."""
        self._move(
            ctxt, host, 'revert_resize', instance_uuid, request_id, migration
        )

    def finish_revert_resize(
        self, ctxt, host, instance_uuid, request_id, migration
    ):
        """Cast: the source takes the server back with its old flavor."""
        self._move(
            ctxt,
            host,
            'finish_revert_resize',
            instance_uuid,
            request_id,
            migration,
        )
