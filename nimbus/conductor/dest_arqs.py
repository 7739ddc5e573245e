"""The destination's ARQs of a move that is undone before its end: those
its migration records, and any other ARQ of the instance bound to the
destination host (one a destination created and bound, then died before
recording). Never the source's: the server keeps those.

Used by the undo of a cross-cell move (:mod:`.cross_cell_arqs`) and by the
recovery of a same-cell move left waiting (:mod:`.move_recovery`).
"""

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

# A migration's details, as nimbus.compute.move_arqs names them.
SOURCE = 'source_accel_uuids'
DEST = 'dest_accel_uuids'


def held_on(conductor, ctxt, instance_uuid, host):
    """The uuids of ``instance_uuid``'s ARQs bound to ``host``, as the
    accelerator service lists them; [] without a service or a host, or
    when the listing fails (the recorded ones are still deleted)."""
    if conductor.accelerator is None or not host:
        return []
    try:
        held = conductor.accelerator.client.get_arqs_for_instance(
            ctxt, instance_uuid
        )
    except Exception:  # noqa: BLE001 - the recorded ones still go
        LOG.warning(
            'Could not list the ARQs of %s', instance_uuid, exc_info=True
        )
        return []
    return [arq['uuid'] for arq in held or [] if arq.get('hostname') == host]


def delete(conductor, ctxt, uuids):
    """Delete ``uuids`` (deleting one already gone is harmless)."""
    if not uuids:
        return
    if conductor.accelerator is None:
        LOG.warning(
            'No accelerator service configured: ARQs %s not deleted',
            ', '.join(uuids),
        )
        return
    LOG.info('Deleting ARQs %s', ', '.join(uuids))
    conductor.accelerator.delete(ctxt, list(uuids))


def undo(conductor, ctxt, instance_uuid, dest_host, recorded, keep):
    """Delete the destination's ARQs: ``recorded`` (the uuids the move's
    records name) and those :func:`held_on` ``dest_host``, less ``keep``
    (the source's, which stay the server's). The uuids deleted."""
    found = set(recorded) | set(
        held_on(conductor, ctxt, instance_uuid, dest_host)
    )
    uuids = sorted(found - set(keep))
    delete(conductor, ctxt, uuids)
    return uuids
