"""Deleting an instance on its compute (``terminate_instance``).

The guest is destroyed first, then what the instance holds elsewhere is
given back (its ARQs, its allocation in placement) and its record marked
deleted. What the accelerator service or placement cannot free at that
moment (either is down) is left to the super conductor's recovery pass,
which frees the ARQs and allocations of deleted instances: the user's
delete is never lost to their outage. (Before, a placement outage ended
the terminate before the record was marked deleted; a build still in
flight then took the instance back to ACTIVE without its guest.)
"""

from oslo_log import log as logging
from oslo_utils import timeutils

from nimbus.common import instance_states as states

LOG = logging.getLogger(__name__)


def terminate(runner, ctxt, instance_uuid):
    """Destroy the guest of ``instance_uuid`` on ``runner``'s host and mark
    the instance deleted."""
    runner.driver.destroy(instance_uuid)
    if runner.accelerator is not None:
        try:
            runner.accelerator.delete_arqs_for_instance(ctxt, instance_uuid)
        except Exception:
            LOG.exception('Could not delete the ARQs of %s', instance_uuid)
    try:
        runner.placement.remove_allocations(ctxt, instance_uuid)
    except Exception as exc:  # noqa: BLE001 - the recovery pass frees it later
        LOG.warning(
            'Could not free the allocation of %s (%s); deleting it anyway, '
            'the recovery pass frees it',
            instance_uuid,
            exc,
        )
    runner.events.clear(instance_uuid)
    runner.conductor.instance_update(
        ctxt,
        instance_uuid,
        list(states.sources_of(states.DELETED)),
        {
            'vm_state': states.DELETED,
            'task_state': None,
            'deleted': True,
            'terminated_at': timeutils.utcnow().isoformat(),
        },
    )
