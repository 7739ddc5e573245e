"""The late server group check, made on the compute just before spawning.

Schedulers decide on what their caches knew a moment ago; with several of
them, or many requests in flight, two members of an anti-affinity group can
be sent to one host (or members of an affinity group to two). The compute is
where the decision becomes real, so it checks again there: it asks its cell
conductor where the group's members are at that moment (computes hold no
database credentials) and refuses the build if spawning here would break
the policy. The refusal is not the host's fault: the build goes to the next
alternate without counting as a build failure of this host.

Only members that have passed this check count (ACTIVE, or building with
task_state ``spawning``): a member that was merely sent here and may yet be
refused must not make its rival refuse too, or both would move on. Checks of
one group are serialised in the process (all builds of a host run in its
process), and the check and the move to ``spawning`` happen under the same
lock, so two racing members of a group on one host cannot both pass.
"""

from nimbus.common import instance_states as states
from nimbus.common import keyed_locks

POLICIES = ('affinity', 'anti-affinity')


class GroupPolicyViolation(Exception):
    """Spawning here would break the server group's policy."""


# group uuid -> [lock, holders and waiters], while a build of the group
# holds or waits for it
_registry = keyed_locks.KeyedLocks()
_locks = _registry.entries


def serialised(group_uuid):
    """Hold the process-wide lock of ``group_uuid`` (a no-op for None)."""
    return _registry.held(group_uuid)


def _counts(member):
    return (
        member.vm_state in states.HOLDS_HOST
        or member.task_state == states.SPAWNING
    )


def check(conductor, ctxt, host, instance_uuid, group):
    """Raise GroupPolicyViolation when ``instance_uuid`` may not spawn on
    ``host`` given ``group`` (the request spec's ``instance_group``, an
    InstanceGroup, or None). The members the cell conductor names are
    Instance records (uuid, host, vm_state and task_state set)."""
    if group is None or group.policy not in POLICIES:
        return
    members = [
        m
        for m in conductor.group_members(
            ctxt, group.uuid, exclude=instance_uuid
        )
        if _counts(m)
    ]
    if group.policy == 'anti-affinity':
        rules = group.rules or {}
        limit = int(rules.get('max_server_per_host', 1))
        here = sorted(m.uuid for m in members if m.host == host)
        if len(here) >= limit:
            raise GroupPolicyViolation(
                'Anti-affinity instance group policy was violated: %s '
                'already holds %d member(s) of group %s (%s), at most %d '
                'allowed'
                % (host, len(here), group.uuid, ', '.join(here), limit)
            )
        return
    elsewhere = sorted({m.host for m in members if m.host != host})
    if elsewhere:
        raise GroupPolicyViolation(
            'Affinity instance group policy was violated: members of group '
            '%s run on %s, not on %s'
            % (group.uuid, ', '.join(elsewhere), host)
        )
