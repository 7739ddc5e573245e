"""A cell conductor: the cell's only writer, and the walker of alternates.

Computes hold no database credentials; their state changes arrive here as
RPC calls. When a build fails, the compute hands the remaining alternates
here: claim the next alternate's allocation request in placement and cast
the build to that host, until one claim holds; when none is left, the
instance goes to ERROR with a fault listing every attempt.

Placement refuses an alternate's claim for one of two reasons
(``PlacementClient.claim``): the room went to someone else (refused: try the
next alternate), or the instance's own allocations changed under us
(consumer conflict: no host can fix that, and the allocations placement now
holds for the instance are not ours to delete, so the walk stops and the
instance goes to ERROR with a fault that says so).
"""

import datetime

from oslo_log import log as logging

from nimbus.common.clients import placement as placement_client
from nimbus.common import instance_states as states
from nimbus.common.db import types
from nimbus.common.objects import Instance
from nimbus.common.objects import migration as migration_obj
from nimbus.conductor import accelerators
from nimbus.conductor import db_slots
from nimbus.db import cell_instances as instances
from nimbus.db import cell_migrations
from nimbus.db import cell_services as services
from nimbus.db import instance_actions as actions
from nimbus.db.cell_instances import actions as instance_changes
from nimbus.db.cell_instances import contract as instance_contract
from nimbus.db.cell_instances import queries
from nimbus.db.cell_instances import swap as instance_swap

LOG = logging.getLogger(__name__)


def _instance(row):
    """The Instance contract of a cell's instance row."""
    return Instance(**instances.to_dict(row))


def _to_error(session, instance_uuid, message, details):
    """The building instance goes to ERROR with a fault; its row, or None
    when it had left building."""
    return instances.transition(
        session,
        instance_uuid,
        [states.BUILDING],
        {
            'vm_state': states.ERROR,
            'task_state': None,
            'fault': {'message': message, 'details': details},
        },
    )


def _attempt_lines(tried):
    return [
        '%d. %s: %s%s'
        % (
            n,
            a['host'],
            a['result'],
            (' - ' + a['reason']) if a['reason'] else '',
        )
        for n, a in enumerate(tried, 1)
    ]


class CellConductor:
    def __init__(
        self, conf, cell_db, placement, compute_api, accelerator=None
    ):
        self.conf = conf
        self.accelerator = accelerator
        self.db = cell_db
        self._slots = db_slots.for_database(cell_db)
        self.placement = placement
        self.compute_api = compute_api

    # Deliberately like CellConductorManager.build_instances: that is the
    # RPC endpoint declaring the message, this the work it hands over.
    def build_instances(
        self,
        ctxt,
        instance_uuid,
        request_spec,
        host_list,
        failed_host=None,
        reason=None,
        taken=False,
    ):
        """Step 18 of the scheduling workflow: the build on the selected
        host failed, so walk the alternates ``host_list`` (Selections) for
        ``request_spec`` (a RequestSpec): claim each one's allocation
        request and cast the build to the first host whose claim holds;
        when none is left, the instance goes to ERROR.

        A reschedule from ``failed_host`` first takes the build off that
        host in one compare-and-swap of the cell's row (``leave_host``):
        the same cast delivered twice, or late, to this or another cell
        conductor process, or the build check taking the build at the same
        moment, finds it moved on (off the host, on an alternate, ACTIVE,
        ERROR or deleted) and changes nothing. ``taken``: the build
        check's own call, which took the build off ``failed_host`` already
        (``take_alternates``)."""
        if (
            failed_host is not None
            and not taken
            and not self._take_off(ctxt, instance_uuid, failed_host)
        ):
            return
        self._walk_alternates(
            ctxt, instance_uuid, request_spec, host_list, failed_host, reason
        )

    def _take_off(self, ctxt, instance_uuid, host):
        """True when this call took the build off ``host``, where it was
        still building; else the reschedule is stale (and whatever a
        deleted instance still holds in placement is released)."""
        with self.db.session() as session:
            if instances.leave_host(session, instance_uuid, host):
                return True
            row = instances.get(session, instance_uuid)
            where = None
            if row is not None and not row.deleted:
                where = (row.vm_state, row.host)
        LOG.info(
            'Dropped a stale reschedule of %s from %s: the instance is %s now',
            instance_uuid,
            host,
            'gone' if where is None else '%s on %s' % where,
        )
        if where is None:
            self.placement.remove_allocations(ctxt, instance_uuid)
        return False

    def _walk_alternates(
        self, ctxt, instance_uuid, request_spec, host_list, failed_host, reason
    ):
        for index, selection in enumerate(host_list):
            host = selection.service_host
            outcome = self.placement.claim(
                ctxt,
                instance_uuid,
                selection.allocation_request,
                request_spec.project_id,
                request_spec.user_id,
                consumer_generation=None,
            )
            if outcome.status == placement_client.CONSUMER_CONFLICT:
                self._consumer_conflict(
                    instance_uuid, selection, outcome.detail
                )
                return
            if not outcome.claimed:
                LOG.info(
                    'Alternate %s for %s is gone; trying the next: %s',
                    host,
                    instance_uuid,
                    outcome.detail,
                )
                # Deliberately like _consumer_conflict's record: that one
                # goes on to read the attempts in the same session.
                with self.db.session() as session:
                    instances.record_attempt(
                        session,
                        instance_uuid,
                        host,
                        selection.nodename,
                        'claim-failed',
                        "placement refused the alternate's claim%s"
                        % (': %s' % outcome.detail if outcome.detail else ''),
                    )
                continue
            updates = {
                'host': host,
                'node': selection.nodename,
                'compute_node_uuid': selection.compute_node_uuid,
                'task_state': states.RESCHEDULING,
                # What is left if this host dies too (build check).
                'build_alternates': instances.alternates(
                    request_spec, host_list[index + 1 :]
                ),
            }
            if selection.availability_zone:
                # The alternate's zone (set by the super conductor when the
                # server asked for none).
                updates['availability_zone'] = selection.availability_zone
            with self.db.session() as session:
                row = instances.transition(
                    session, instance_uuid, [states.BUILDING], updates
                )
                instance = _instance(row) if row is not None else None
            if instance is None:
                LOG.info('Instance %s is no longer building', instance_uuid)
                self.placement.remove_allocations(ctxt, instance_uuid)
                return
            LOG.info(
                'Rescheduling %s from %s to %s',
                instance_uuid,
                failed_host,
                host,
            )
            accel_uuids = self._rebind_accelerators(
                ctxt, instance, request_spec, selection
            )
            if accel_uuids is None:
                self.placement.remove_allocations(ctxt, instance_uuid)
                continue
            self.compute_api.build_and_run_instance(
                ctxt,
                host,
                instance,
                request_spec,
                selection,
                host_list[index + 1 :],
                accel_uuids,
            )
            return
        self._give_up(ctxt, instance_uuid, failed_host, reason)

    def _rebind_accelerators(self, ctxt, instance, request_spec, selection):
        """New ARQs bound on the alternate (the old ones are deleted), and
        stored on the Instance; None when they cannot be bound there."""
        if not request_spec.device_profile:
            return instance.accel_uuids or []
        if self.accelerator is not None and instance.accel_uuids:
            self.accelerator.delete(ctxt, instance.accel_uuids)
            with self.db.session() as session:
                instances.transition(
                    session,
                    instance.uuid,
                    [states.BUILDING],
                    {'accel_uuids': []},
                )
        try:
            uuids = accelerators.bind_for_build(
                self.accelerator, ctxt, instance.uuid, request_spec, selection
            )
        except accelerators.AcceleratorBindError as exc:
            LOG.warning(
                'Alternate %s for %s: %s',
                selection.service_host,
                instance.uuid,
                exc,
            )
            with self.db.session() as session:
                instances.record_attempt(
                    session,
                    instance.uuid,
                    selection.service_host,
                    selection.nodename,
                    'failed',
                    str(exc),
                )
            return None
        with self.db.session() as session:
            instances.transition(
                session,
                instance.uuid,
                [states.BUILDING],
                {'accel_uuids': uuids},
            )
        return uuids

    def _consumer_conflict(self, instance_uuid, selection, detail):
        """The instance's allocations changed under the reschedule: stop,
        leave them alone (they are someone else's) and fail the instance."""
        host = selection.service_host
        reason = (
            "placement refused the claim on %s: the consumer's "
            'allocations changed under it%s'
            % (host, ' (%s)' % detail if detail else '')
        )
        with self.db.session() as session:
            instances.record_attempt(
                session,
                instance_uuid,
                host,
                selection.nodename,
                'claim-conflict',
                reason,
            )
            lines = _attempt_lines(instances.attempts(session, instance_uuid))
            row = _to_error(
                session,
                instance_uuid,
                'Reschedule stopped on %s: the '
                "consumer's allocations changed under it." % host,
                '\n'.join(lines),
            )
        if row is None:
            LOG.info(
                'Instance %s left building before its reschedule failed',
                instance_uuid,
            )
        else:
            LOG.warning('Reschedule of %s stopped: %s', instance_uuid, reason)

    def _give_up(self, ctxt, instance_uuid, failed_host, reason):
        self.placement.remove_allocations(ctxt, instance_uuid)
        with self.db.session() as session:
            tried = instances.attempts(session, instance_uuid)
            lines = _attempt_lines(tried)
            message = (
                'Exhausted all hosts available for retrying build '
                'failures (%d attempt%s).'
                % (len(tried), '' if len(tried) == 1 else 's')
            )
            row = _to_error(
                session, instance_uuid, message, '\n'.join(lines) or reason
            )
        if row is None:
            LOG.info(
                'Instance %s left building before it failed', instance_uuid
            )
        else:
            LOG.warning(
                'Instance %s failed on every host: %s',
                instance_uuid,
                '; '.join(lines),
            )

    def instance_update(
        self,
        ctxt,
        instance_uuid,
        expected_vm_states,
        change,
        host=None,
        attempt=None,
        task_states=None,
        brief=False,
    ):
        """Compare-and-swap ``change`` (an InstanceUpdate) onto the
        instance; its record (an Instance), or None when it was not in an
        expected state or, with ``host``, is no longer on that host;
        ``brief`` (RPC 1.16): True instead of the record (not read).
        ``attempt`` (``{'host', 'node', 'result', 'reason'}``, RPC 1.4) is
        recorded as a build attempt in the same transaction when the swap
        holds (once: a retried swap finds it there). ``task_states``
        (RPC 1.5): the task states the swap expects (None: any)."""
        updates = change.changes()
        # In Core, without an ORM session (nimbus.db.cell_instances.swap):
        # the ORM's bulk update and whole-row load were most of this
        # call's CPU.
        with self._slots, self.db.engine.begin() as connection:
            values = instance_swap.swap(
                connection,
                instance_uuid,
                expected_vm_states,
                updates,
                host,
                expected_task_states=task_states,
                attempt=attempt or None,
                read=not brief,
            )
        result = values
        if values is not None:
            result = True if brief else Instance(**values)
        LOG.debug(
            'Instance %s %s from %s: %s',
            instance_uuid,
            'not updated' if result is None else 'updated',
            expected_vm_states,
            sorted(updates),
        )
        return result

    def instance_action_event(self, ctxt, event):
        """Record an ActionEvent on its instance action; False when the
        cell has no such action."""
        with self.db.session() as session:
            if event.phase == 'start':
                return actions.event_start(
                    session,
                    event.instance_uuid,
                    event.request_id,
                    event.event,
                    event.host,
                    event.time,
                )
            done = actions.event_finish(
                session,
                event.instance_uuid,
                event.request_id,
                event.event,
                event.host,
                event.result,
                event.traceback,
                event.details,
                event.time,
            )
            if done and event.last:
                actions.finish(session, event.instance_uuid, event.request_id)
            return done

    def record_build_attempt(
        self, ctxt, instance_uuid, host, node, result, reason=None
    ):
        with self.db.session() as session:
            instances.record_attempt(
                session, instance_uuid, host, node, result, reason
            )

    def service_heartbeat(self, ctxt, host, binary, availability_zone=None):
        with self.db.session() as session:
            return services.heartbeat(session, host, binary, availability_zone)

    def service_heartbeats(self, ctxt, heartbeats):
        """Record a ServiceHeartbeats batch in one transaction."""
        with self.db.session() as session:
            return services.heartbeats(
                session,
                heartbeats.hosts,
                heartbeats.binary,
                heartbeats.availability_zone,
            )

    def service_disable(self, ctxt, host, binary, reason):
        """Disable a service of the cell (a compute that keeps failing its
        builds); the reason shows in ``GET /os-services``."""
        with self.db.session() as session:
            result = services.disable(session, host, binary, reason)
        LOG.warning('Service %s on %s disabled: %s', binary, host, reason)
        return result

    def group_members(self, ctxt, group_uuid, exclude=None):
        """Where the live members of a server group are in this cell (the
        compute's late group check)."""
        with self.db.session() as session:
            members = instances.group_members(session, group_uuid, exclude)
        return [Instance(**m) for m in members]

    def compute_node_update(self, ctxt, record):
        with self.db.session() as session:
            return services.update_compute_node(session, record)

    def compute_nodes_update(self, ctxt, records):
        """:meth:`compute_node_update` of each record, in one
        transaction (a thousand simulated hosts starting together)."""
        with self.db.session() as session:
            return services.update_compute_nodes(session, records)

    def reclaimable(self, ctxt, host, seconds):
        """The uuids of the instances on ``host`` soft-deleted more than
        ``seconds`` ago (``[DEFAULT] reclaim_instance_interval``)."""
        cutoff = types.utcnow() - datetime.timedelta(seconds=seconds)
        with self.db.session() as session:
            return instance_changes.soft_deleted_before(session, host, cutoff)

    def shelved_offloadable(self, ctxt, host, seconds):
        """The uuids of the instances on ``host`` SHELVED more than
        ``seconds`` ago (``[DEFAULT] shelved_offload_time``)."""
        cutoff = types.utcnow() - datetime.timedelta(seconds=seconds)
        with self.db.session() as session:
            return instance_changes.shelved_before(session, host, cutoff)

    def evacuations_done(self, ctxt, host):
        with self.db.session() as session:
            rows = cell_migrations.from_source(
                session, host, ['done'], [migration_obj.EVACUATION]
            )
        return [migration_obj.Migration.from_row(r) for r in rows]

    def migration_set_status(self, ctxt, migration_uuid, status, expected):
        with self.db.session() as session:
            return cell_migrations.set_status(
                session, migration_uuid, status, expected
            )

    def hosts_with_records(self, ctxt, hosts):
        """Which of ``hosts`` an instance or a migration of the cell names
        (sorted): the others have nothing to recover when they start."""
        with self.db.session() as session:
            found = queries.hosts_named(session, hosts)
            found |= cell_migrations.hosts_named(session, hosts)
        return sorted(found)

    def instances_on_host(self, ctxt, host):
        """The live instances (Instance records) the cell places on
        ``host``."""
        return self.instances_on_hosts(ctxt, [host])[host]

    def instances_on_hosts(self, ctxt, hosts):
        """``{host: [Instance]}``: :meth:`instances_on_host` of each of
        ``hosts`` in one read (the periodic update of a slice of simulated
        hosts)."""
        with self._slots, self.db.engine.connect() as connection:
            found = instance_contract.on_hosts(connection, hosts)
        return {
            host: [Instance(**d) for d in rows] for host, rows in found.items()
        }
