"""A compute's part of a resize or cold migrate to another cell (Nova's
snapshot-based resize, since Ussuri): the guest work only.

The super conductor drives such a move (:mod:`nimbus.conductor.cross_cell_resize`):
it owns both cells' databases, so it records every state; the computes
of the two cells share no bus and never talk to each other. Each step
here is one call answered ``{'ok': bool, 'error': str, ...}``:

- destination, ``prep_at_dest``: the driver checks it can take the guest
  with the new flavor;
- source, ``prep_at_source``: the guest powered off (kept until the
  confirm);
- destination, ``finish_at_dest``: the guest spawned with the new
  flavor (powered off again for a server that was stopped);
- source, ``confirm_at_source``: the old guest destroyed;
- destination, ``revert_at_dest``: the new guest destroyed;
- source, ``finish_revert_at_source``: the old guest powered on (a
  stopped server stays off).

Each is idempotent: a guest already gone, off or on is left so.
"""

import dataclasses

from oslo_log import log as logging

from nimbus.common import instance_states as states

LOG = logging.getLogger(__name__)


def _was_stopped(migration):
    return (migration.details or {}).get('vm_state') == states.STOPPED


class CrossCellSteps:
    def __init__(self, host, driver):
        self.host = host
        self.driver = driver

    def _has(self, uuid):
        return uuid in set(self.driver.list_instances())

    def prep_at_dest(self, ctxt, migration):
        self.driver.prep_resize(migration.instance_uuid, migration.new_flavor)
        return {'ok': True}

    def prep_at_source(self, ctxt, migration):
        uuid = migration.instance_uuid
        if not self._has(uuid):
            return {
                'ok': False,
                'error': 'no guest %s on %s' % (uuid, self.host),
            }
        self.driver.power_off(uuid)
        return {'ok': True}

    def finish_at_dest(self, ctxt, migration, instance):
        uuid = migration.instance_uuid
        if not self._has(uuid):
            self.driver.spawn(
                dataclasses.replace(instance, flavor=migration.new_flavor),
                {},
                [],
            )
        power = states.RUNNING
        if _was_stopped(migration):
            self.driver.power_off(uuid)
            power = states.SHUTDOWN
        return {'ok': True, 'power_state': power}

    def confirm_at_source(self, ctxt, migration):
        self.driver.destroy(migration.instance_uuid)
        return {'ok': True}

    def revert_at_dest(self, ctxt, migration):
        self.driver.destroy(migration.instance_uuid)
        return {'ok': True}

    def finish_revert_at_source(self, ctxt, migration):
        uuid = migration.instance_uuid
        if not self._has(uuid):
            return {
                'ok': False,
                'error': 'no guest %s on %s' % (uuid, self.host),
            }
        if _was_stopped(migration):
            self.driver.power_off(uuid)
            return {'ok': True, 'power_state': states.SHUTDOWN}
        self.driver.power_on(uuid)
        return {'ok': True, 'power_state': states.RUNNING}
