"""Accelerators of a resize or cold migrate (beyond Nova, which refuses to
move a server with a device profile).

The server keeps the ARQs bound on its source until the move is over;
the destination gets ARQs of its own:

- destination, ``prep_resize``: ARQs of the new flavor's device profile
  (the same profile for a cold migrate) are created, bound to this host,
  the instance and the device providers the scheduler's allocation
  request mapped to each group, and awaited (``accelerator-request-bound``,
  ``[compute] arq_binding_timeout``) before the source lets the guest go;
  their uuids are kept in the migration's details (``dest_accel_uuids``,
  beside ``source_accel_uuids``, recorded by the super conductor). A
  failed create, bind or wait deletes them and fails the prep (the next
  alternate is tried, or the move undone);
- destination, ``finish_resize``: the guest is spawned with the bound
  ARQs and the instance's ``accel_uuids`` become the destination's;
- ``confirm_resize`` (source) deletes the source's ARQs;
  ``revert_resize`` (destination) deletes the destination's and
  ``finish_revert_resize`` gives the instance the source's back;
- a move that fails after the prep deletes the destination's ARQs.

A live migration (:mod:`nimbus.compute.live_migration`) does the same
with the server's own profile: the super conductor records the source's
ARQs and the device providers placement gave each group on the
destination (``dest_device_mappings``, :func:`live_selection`); the
destination's ``pre_live_migration`` binds and awaits new ARQs before
the copy starts; ``post_live_migration_at_destination`` spawns the
guest with them and makes them the instance's, and the source then
deletes its own; a rollback (failure, abort, a restarted source)
deletes the destination's (on the source, which may outlive the
destination) and the server keeps the source's.
"""

from oslo_log import log as logging

from nimbus.common.clients import arq_binding
from nimbus.common.objects.selection import Selection
from nimbus.compute import arq_wait

LOG = logging.getLogger(__name__)

SOURCE = 'source_accel_uuids'
DEST = 'dest_accel_uuids'
MAPPINGS = 'dest_device_mappings'


def profile_of(flavor):
    """The flavor's ``accel:device_profile`` (a flavor dict), or None."""
    specs = (flavor or {}).get('extra_specs') or {}
    return specs.get('accel:device_profile') or None


def source_arqs(migration):
    return list((migration.details or {}).get(SOURCE) or [])


def dest_arqs(migration):
    return list((migration.details or {}).get(DEST) or [])


def live_selection(migration, host):
    """The Selection a live migration's destination binds with: ``host``
    and the group mappings the super conductor recorded (the check and
    the prep are not given the scheduler's Selection)."""
    mappings = (migration.details or {}).get(MAPPINGS) or {}
    return Selection(
        service_host=host,
        allocation_request={'mappings': dict(mappings)},
        nodename=migration.dest_node,
    )


class MoveArqs:
    """``MoveArqs(conf, client, events)``: ``client`` the accelerator API
    client (None without an accelerator service), ``events`` the host's
    InstanceEvents."""

    def __init__(self, conf, client, events):
        self.conf = conf
        self.client = client
        self.events = events

    def bind(self, ctxt, migration, selection, host):
        """Create and bind the ARQs of the move's new flavor on ``host``;
        their uuids ([] without a device profile). Raises
        AcceleratorBindFailed (nothing left behind) when they cannot be
        made or bound."""
        profile = profile_of(migration.new_flavor)
        if not profile:
            return []
        if self.client is None:
            raise arq_wait.AcceleratorBindFailed(
                'device profile %s requested but no accelerator service is '
                'configured on %s' % (profile, host)
            )
        binder = arq_binding.AcceleratorBinder(self.client)
        try:
            return binder.bind_profile(
                ctxt, migration.instance_uuid, profile, selection
            )
        except arq_binding.AcceleratorBindError as exc:
            raise arq_wait.AcceleratorBindFailed(str(exc)) from exc

    def bind_recorded(self, ctxt, migration, selection, host, record):
        """:meth:`bind` on ``host``, then ``record(details)`` (the
        migration's details with the new uuids under ``DEST``; answers
        the migration as recorded), then :meth:`wait`: the destination's
        ARQs are known to the move before they are awaited, so every
        way out of it finds them. A failure deletes them and raises.
        The migration as recorded (``migration`` without a profile)."""
        uuids = self.bind(ctxt, migration, selection, host)
        if not uuids:
            return migration
        try:
            moved = record(dict(migration.details or {}, **{DEST: uuids}))
        except Exception:
            self.delete(ctxt, uuids)
            raise
        self.wait(ctxt, migration.instance_uuid, uuids)  # deletes on failure
        return moved

    def wait(self, ctxt, instance_uuid, arq_uuids):
        """Wait until every ARQ is bound (as a build does); a failed bind
        or a timeout deletes them and raises AcceleratorBindFailed."""
        return arq_wait.wait_bound(
            self.conf, self.client, self.events, ctxt, instance_uuid, arq_uuids
        )

    def attached(self, ctxt, arq_uuids):
        """The bound ARQs, as the driver's spawn takes them (None without
        any)."""
        if not arq_uuids or self.client is None:
            return None
        return self.client.get_arqs(ctxt, arq_uuids)

    def delete(self, ctxt, arq_uuids):
        """Delete ARQs (logging, not raising, a failure)."""
        if arq_uuids:
            LOG.info('Deleting ARQs %s', ', '.join(arq_uuids))
            arq_wait.delete(self.client, ctxt, list(arq_uuids))
