"""RPC clients of the conductors: the only place that knows their methods.

Two services share the topic ``conductor``: the super conductor on the API
bus and each cell conductor on its cell's bus. Which one a client reaches is
decided by the transport it is built with.

Version history
  1.0  schedule_and_build_instances (super); build_instances,
       instance_update, service_heartbeat, compute_node_update,
       instances_on_host, record_build_attempt (cell).
  1.1  service_disable (a compute past its consecutive build failure
       threshold), group_members (the compute's late server group check)
       (cell).
  1.2  instance_update takes expected_host: the swap holds only while
       the instance is still on that host (a compute's build, so that a
       build rescheduled away from it is never taken back) (cell).
  1.3  service_heartbeats: one call carries the heartbeats of many hosts
       of one binary (a ServiceHeartbeats; a process of simulated hosts
       sends one per report interval instead of one per host) (cell).
  1.4  instance_update takes build_attempt: recorded in the same
       transaction when the swap holds (a compute's final swap of a build
       carries its record: one call less per boot) (cell).
  1.5  instance_update takes expected_task_states: the swap holds only
       while the instance's task is one of them (a server action's
       compute ends only the task it was asked to do);
       instance_action_event (an ActionEvent: a step of an instance
       action, os-instance-actions); reclaimable (the soft-deleted
       instances of a host past [DEFAULT] reclaim_instance_interval)
       (cell).
  1.6  migrate_server (a resize or cold migrate the compute API took the
       task of; super); move_step (a step of a cold move: the migration's
       status and the instance's state swapped in one transaction, for
       the computes; cell); unconfirmed_resizes (the moves finished on a
       host longer than [DEFAULT] resize_confirm_window ago, taken for
       their confirm; cell).
  1.7  shelve and evacuate (issue 24, section 2): unshelve_instance and
       evacuate_instance (super, casts); shelved_offloadable,
       evacuations_done (Migration 1.0 primitives) and
       migration_set_status (cell, calls).
  1.8  live migration (issue 24, section 2): live_migrate_instance
       (super, cast: schedule, the destination's check with retries,
       then the source's live_migration); live_migrations_from (cell,
       call: the live migrations a restarted source rolls back).
  1.9  migrate_server takes cross_cell (compute:servers:resize:cross_cell
       allowed it: the scheduler may choose a host of another cell).
  1.10 moves_of_host (cell, call): the cold moves in progress with a
       host as source or destination, which a compute settles when it
       starts again after a crash (issue 24, section 3).
  1.11 confirm_cross_cell_resize and revert_cross_cell_resize (super,
       casts): the end of a resize or cold migrate that carried the
       server to another cell (migration cross_cell_move), which the
       super conductor drives since it owns both cells' databases.
  1.12 confirm_cross_cell_resize takes wait: sent as a call, answered
       once the confirm has ended (the API confirms a cross-cell move
       before it deletes a server in VERIFY_RESIZE, as Nova) (super).
  1.13 hosts_with_records (cell, call): which of many hosts an instance
       or a migration names; the simulated hosts of a process ask once,
       and those named by none skip their startup recovery reads.
  1.14 compute_nodes_update (cell, call): the compute node records of
       many hosts in one transaction (the simulated hosts of a process,
       before they start).
  1.15 instances_on_hosts (cell, call): the live instances of many
       hosts in one read, ``{host: [Instance]}``; the simulated hosts of
       a process ask once per slice of their periodic resource update
       (and send the slice's node records in one compute_nodes_update)
       instead of one instances_on_host call per busy host.
  1.16 instance_update takes brief: the answer is true (the swap held)
       or null, not the record after the swap, which the cell conductor
       then does not read back (a build's last swap, whose answer the
       compute only tests) (cell).
  Which version a client sends is oslo.messaging's ``version_cap``:
  ``[upgrade_levels] conductor`` (unset: VERSION) during a rolling
  upgrade; where an older form exists, ``can_send_version`` picks it.
  The answers of instance_update, instances_on_host and group_members
  are Instance 1.0 primitives (an answer without a version, from an
  older cell conductor, loads as 1.0).

Calls that lose their reply (a broker restart drops replies in flight) are
retried here, and only where a retry is safe: every call of the cell
conductor is idempotent, and ``instance_update`` on a retry also accepts the
state it was moving to, so a retried compare-and-swap that had in fact
succeeded is recognised instead of reported as lost.
"""

from oslo_log import log as logging

from nimbus.common import rpc
from nimbus.common.rpc import options as rpc_options
from nimbus.common.objects import action_event as event_obj
from nimbus.common.objects import heartbeats as heartbeats_obj
from nimbus.common.objects import Instance
from nimbus.common.objects import instance_update as update_obj
from nimbus.common.objects import selection as selection_obj
from nimbus.conductor import rpc_retry
from nimbus.conductor import rpcapi_moves

LOG = logging.getLogger(__name__)

TOPIC = 'conductor'
VERSION = '1.16'


def _client(transport, conf):
    """A client of the topic, both conductors' (which one answers is the
    transport's bus), capped by ``[upgrade_levels] conductor``."""
    return rpc.get_client(
        transport,
        TOPIC,
        VERSION,
        conf=conf,
        version_cap=rpc_options.version_cap(conf, 'conductor'),
    )


class SuperConductorAPI(rpcapi_moves.SuperMoveCalls):
    """Client of the super conductor (API bus)."""

    def __init__(self, transport, conf=None):
        # ``[upgrade_levels] conductor`` caps it too (an API upgraded
        # before its super conductor): takes_cross_cell_ends() and
        # takes_cross_cell_deletes() read it.
        self._client = _client(transport, conf)

    def schedule_and_build_instances(self, ctxt, request_spec, instance_uuids):
        """Cast: schedule the build requests and send them to their cells.

        ``request_spec`` is a RequestSpec (contracts.md); the build
        requests are read from the API database by instance uuid.
        """
        self._client.prepare(version='1.0').cast(
            ctxt,
            'schedule_and_build_instances',
            request_spec=request_spec.to_primitive(),
            instance_uuids=instance_uuids,
        )


class CellConductorAPI(rpcapi_moves.CellMoveCalls):
    """Client of a cell conductor (the cell's bus).

    A method here spells out its message's arguments, and the endpoint
    (:mod:`.manager`) and the cell conductor's method spell them out again:
    deliberately, each is its side's declaration of the message (the
    client builds it, the endpoint checks it, the domain method uses it).
    """

    def __init__(self, transport, conf=None):
        self._client = _client(transport, conf)

    def build_instances(
        self,
        ctxt,
        instance_uuid,
        request_spec,
        host_list,
        failed_host=None,
        reason=None,
    ):
        """Cast: the build on ``failed_host`` failed; try the alternates.

        ``request_spec`` is a RequestSpec, ``host_list`` the remaining
        Selections, in order. Idempotent: a copy delivered twice or late
        finds the instance no longer building on ``failed_host`` and is
        dropped.
        """
        self._client.prepare(version='1.0').cast(
            ctxt,
            'build_instances',
            instance_uuid=instance_uuid,
            request_spec=request_spec.to_primitive(),
            host_list=selection_obj.list_to_primitive(host_list),
            failed_host=failed_host,
            reason=reason,
        )

    def instance_update(
        self,
        ctxt,
        instance_uuid,
        expected_vm_states,
        updates,
        expected_host=None,
        build_attempt=None,
        expected_task_states=None,
        brief=False,
    ):
        """Call: compare-and-swap the instance's state; returns the
        instance (an Instance, as it is after the swap), or None when it
        was not in an expected state (or, with ``expected_host``, no
        longer on that host). ``brief`` (1.16, not with
        ``expected_task_states``): True instead of the instance, which the
        cell conductor then does not read back; a cap below 1.16 sends
        the call without it (the instance is answered).

        ``updates``: the InstanceUpdate's fields as keywords (a field it
        does not have raises TypeError here, before anything is sent).
        ``build_attempt`` (a BuildAttempt) is
        recorded with the swap when it holds (1.4); when
        ``[upgrade_levels] conductor`` caps the version below 1.4 (cell
        conductors of an older release), the swap is sent and then a
        ``record_build_attempt`` call, as before 1.4. ``expected_task_states`` (1.5): the task states
        (None among them for "no task") the swap expects."""
        updates = update_obj.InstanceUpdate(**updates).to_primitive()
        if expected_task_states is not None:
            return self._swap(
                ctxt,
                instance_uuid,
                expected_vm_states,
                updates,
                expected_host,
                task_states=list(expected_task_states),
            )
        carried = build_attempt is not None and self.takes_build_attempts()
        current = self._swap(
            ctxt,
            instance_uuid,
            expected_vm_states,
            updates,
            expected_host,
            build_attempt if carried else None,
            brief=brief,
        )
        if build_attempt is not None and not carried and current is not None:
            self.record_build_attempt(
                ctxt,
                instance_uuid,
                build_attempt.host,
                build_attempt.node,
                build_attempt.result,
                build_attempt.reason,
            )
        return current

    def takes_build_attempts(self):
        """Whether instance_update may carry the build attempt (1.4)."""
        return self._client.can_send_version('1.4')

    def takes_host_record_checks(self):
        """True when the cap lets :meth:`hosts_with_records` go (1.13)."""
        return self._client.can_send_version('1.13')

    @rpc_retry.lost_reply
    def hosts_with_records(self, ctxt, hosts):
        """Call (1.13): which of ``hosts`` (names) an instance or a
        migration of the cell names, deleted or finished ones included
        (a list). A host named by none has nothing its startup recovery
        would find."""
        return self._client.prepare(version='1.13').call(
            ctxt, 'hosts_with_records', hosts=list(hosts)
        )

    def takes_heartbeat_batches(self):
        """Whether ``service_heartbeats`` (1.3) may be sent."""
        return self._client.can_send_version('1.3')

    def _swap(
        self,
        ctxt,
        instance_uuid,
        expected_vm_states,
        updates,
        expected_host,
        build_attempt=None,
        task_states=None,
        brief=False,
    ):
        """One ``instance_update`` call in the oldest version that carries
        its arguments (1.16 with ``brief`` when the cap allows it, 1.5
        with ``task_states``, 1.4 with ``build_attempt``, 1.2 with
        ``expected_host``, else 1.0), retried when its reply is lost; the
        Instance it answers (True for a brief answer), or None."""
        brief = brief and task_states is None and self.takes_brief_swaps()
        if brief:
            version, keys = '1.16', {'expected_host': expected_host}
            if build_attempt is not None:
                keys['build_attempt'] = build_attempt.to_primitive()
            keys['brief'] = True
        elif task_states is not None:
            version, keys = '1.5', {'expected_host': expected_host}
        elif build_attempt is not None:
            version, keys = (
                '1.4',
                {
                    'expected_host': expected_host,
                    'build_attempt': build_attempt.to_primitive(),
                },
            )
        elif expected_host is not None:
            version, keys = '1.2', {'expected_host': expected_host}
        else:
            version, keys = '1.0', {}
        attempts = []

        @rpc_retry.lost_reply
        def call():
            vm_states = list(expected_vm_states)
            tasks = None if task_states is None else list(task_states)
            if attempts:
                # Our first try may have succeeded with its reply lost.
                target = updates.get('vm_state')
                if target is not None and target not in vm_states:
                    vm_states.append(target)
                if tasks is not None and 'task_state' in updates:
                    tasks.append(updates['task_state'])
            attempts.append(1)
            if tasks is not None:
                keys['expected_task_states'] = tasks
            return self._client.prepare(version=version).call(
                ctxt,
                'instance_update',
                instance_uuid=instance_uuid,
                expected_vm_states=vm_states,
                updates=updates,
                **keys,
            )

        answer = call()
        if answer is None:
            return None
        return True if brief else Instance.from_primitive(answer)

    def takes_brief_swaps(self):
        """Whether instance_update may ask for a brief answer (1.16)."""
        return self._client.can_send_version('1.16')

    @rpc_retry.lost_reply
    def instance_action_event(self, ctxt, event):
        """Call (1.5): record ``event`` (an ActionEvent) on its instance
        action; False when the cell has no such action. Idempotent: a
        start or finish delivered twice is recorded once."""
        if not isinstance(event, event_obj.ActionEvent):
            raise TypeError('instance_action_event takes an ActionEvent')
        return self._client.prepare(version='1.5').call(
            ctxt, 'instance_action_event', event=event.to_primitive()
        )

    @rpc_retry.lost_reply
    def reclaimable(self, ctxt, host, seconds):
        """Call (1.5): the uuids of the instances on ``host`` soft-deleted
        more than ``seconds`` ago, with no task under way."""
        return self._client.prepare(version='1.5').call(
            ctxt, 'reclaimable', host=host, seconds=int(seconds)
        )

    @rpc_retry.lost_reply
    def record_build_attempt(
        self, ctxt, instance_uuid, host, node, result, reason=None
    ):
        self._client.prepare(version='1.0').call(
            ctxt,
            'record_build_attempt',
            instance_uuid=instance_uuid,
            host=host,
            node=node,
            result=result,
            reason=reason,
        )

    @rpc_retry.lost_reply
    def service_heartbeat(
        self, ctxt, host, binary, availability_zone=None, timeout=None
    ):
        """Call: create or refresh the service record; returns it.

        ``timeout`` (seconds) bounds a periodic heartbeat by its interval:
        one whose reply was lost (a broker restart) gives way to the next
        instead of holding it back for ``rpc_response_timeout``."""
        return self._client.prepare(version='1.0', timeout=timeout).call(
            ctxt,
            'service_heartbeat',
            host=host,
            binary=binary,
            availability_zone=availability_zone,
        )

    def service_heartbeats(self, ctxt, binary, hosts, timeout=None):
        """Call (1.3): the heartbeats of ``hosts`` (all of ``binary``) in
        one ServiceHeartbeats per at most ``heartbeats.MAX_HOSTS`` hosts,
        each written in one transaction; returns ``{'refreshed',
        'created'}`` summed over the batches.

        Not retried: the next interval's batch is the retry (``timeout``
        bounds it by that interval, as for :meth:`service_heartbeat`).
        Callers check :meth:`takes_heartbeat_batches` first (a cap below
        1.3 means "send them one by one")."""
        total = {'refreshed': 0, 'created': 0}
        batch = heartbeats_obj.ServiceHeartbeats(binary, list(hosts))
        for part in batch.batches():
            answer = self._client.prepare(version='1.3', timeout=timeout).call(
                ctxt, 'service_heartbeats', heartbeats=part.to_primitive()
            )
            for key in total:
                total[key] += int((answer or {}).get(key, 0))
        return total

    @rpc_retry.lost_reply
    def compute_node_update(self, ctxt, node):
        """Call: create or update the compute node record (``node``, a
        ComputeNodeRecord)."""
        return self._client.prepare(version='1.0').call(
            ctxt, 'compute_node_update', node=node.to_primitive()
        )

    def takes_node_batches(self):
        """True when the cap lets :meth:`compute_nodes_update` go (1.14)."""
        return self._client.can_send_version('1.14')

    @rpc_retry.lost_reply
    def compute_nodes_update(self, ctxt, nodes):
        """Call (1.14): :meth:`compute_node_update` of each of ``nodes``
        (ComputeNodeRecords) in one transaction; the answers in order."""
        return self._client.prepare(version='1.14').call(
            ctxt,
            'compute_nodes_update',
            nodes=[node.to_primitive() for node in nodes],
        )

    def takes_host_instance_batches(self):
        """True when the cap lets :meth:`instances_on_hosts` go (1.15)."""
        return self._client.can_send_version('1.15')

    @rpc_retry.lost_reply
    def instances_on_hosts(self, ctxt, hosts):
        """Call (1.15): :meth:`instances_on_host` of each of ``hosts``
        (names) in one read: ``{host: [Instance]}``, every host asked
        present (an empty list when it has none). Callers check
        :meth:`takes_host_instance_batches` first (a cap below 1.15 means
        "one call per host")."""
        answer = self._client.prepare(version='1.15').call(
            ctxt, 'instances_on_hosts', hosts=list(hosts)
        )
        return {
            host: [Instance.from_primitive(i) for i in answer.get(host, ())]
            for host in hosts
        }

    @rpc_retry.lost_reply
    def instances_on_host(self, ctxt, host):
        """Call: the live instances (Instance records) the cell database
        places on ``host``."""
        answer = self._client.prepare(version='1.0').call(
            ctxt, 'instances_on_host', host=host
        )
        return [Instance.from_primitive(i) for i in answer]

    @rpc_retry.lost_reply
    def service_disable(self, ctxt, host, binary, reason):
        """Call (1.1): disable the service with ``reason``; returns its
        record, or None when it has none."""
        return self._client.prepare(version='1.1').call(
            ctxt, 'service_disable', host=host, binary=binary, reason=reason
        )

    @rpc_retry.lost_reply
    def group_members(self, ctxt, group_uuid, exclude=None):
        """Call (1.1): the server group's live members with a host in
        this cell, as Instance records with uuid, host, vm_state and
        task_state."""
        answer = self._client.prepare(version='1.1').call(
            ctxt, 'group_members', group_uuid=group_uuid, exclude=exclude
        )
        return [Instance.from_primitive(m) for m in answer]
