"""Waiting for a build's accelerator requests (ARQs) to be bound.

The conductor creates and binds a build's ARQs; the accelerator service
sends ``accelerator-request-bound`` for each as it resolves. Before it
spawns, the compute waits for those events (``[compute]
arq_binding_timeout``), skipping ARQs the service already reports
resolved. A failed bind or a timeout deletes the ARQs and raises
:class:`AcceleratorBindFailed`, naming the device and the reason.
"""

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


def _failure(arq_uuid, arq):
    """``<arq> (device <rp> on <host>: <reason>)`` as far as known."""
    arq = arq or {}
    where = 'device %s' % (arq.get('device_rp_uuid') or 'unknown')
    if arq.get('hostname'):
        where += ' on %s' % arq['hostname']
    if arq.get('failure_reason'):
        where += ': %s' % arq['failure_reason']
    return '%s (%s)' % (arq_uuid, where)


class AcceleratorBindFailed(RuntimeError):
    """The build's ARQs failed to bind or timed out (and were deleted)."""


def wait_bound(conf, accelerator, events, ctxt, uuid, accel_uuids):
    """Wait for every ARQ's accelerator-request-bound event; the bound
    ARQs. Events that arrived before the wait are kept by
    InstanceEvents; ARQs the accelerator service already reports
    resolved (Bound or BindFailed) are not waited for. A failed bind
    or a timeout deletes the ARQs and raises, naming device and
    reason."""
    if not accel_uuids:
        return None
    resolved = _resolved(accelerator, ctxt, accel_uuids)
    pending = [arq for arq in accel_uuids if arq not in resolved]
    timeout = conf.compute.arq_binding_timeout
    try:
        received = (
            events.wait(uuid, 'accelerator-request-bound', pending, timeout)
            if pending
            else {}
        )
    except TimeoutError as exc:
        delete(accelerator, ctxt, accel_uuids)
        raise AcceleratorBindFailed(
            'Timed out after %ss waiting for accelerator requests %s to '
            'bind' % (timeout, ', '.join(exc.args[0]))
        ) from exc
    statuses = dict(resolved)
    statuses.update({tag: ev.status for tag, ev in received.items()})
    failed = sorted(
        tag for tag, status in statuses.items() if status != 'completed'
    )
    arqs = None
    if accelerator is not None:
        arqs = accelerator.get_arqs(ctxt, accel_uuids)
    if failed:
        by_uuid = {a['uuid']: a for a in arqs or []}
        delete(accelerator, ctxt, accel_uuids)
        raise AcceleratorBindFailed(
            'Accelerator requests failed to bind: %s'
            % ', '.join(_failure(tag, by_uuid.get(tag)) for tag in failed)
        )
    return arqs if arqs is not None else [{'uuid': arq} for arq in accel_uuids]


def _resolved(accelerator, ctxt, accel_uuids):
    """{arq uuid: 'completed' | 'failed'} for ARQs already resolved."""
    if accelerator is None:
        return {}
    try:
        arqs = accelerator.get_arqs(ctxt, accel_uuids)
    except Exception:
        LOG.warning(
            'Could not read ARQs %s; waiting for their events',
            accel_uuids,
            exc_info=True,
        )
        return {}
    states_ = {'Bound': 'completed', 'BindFailed': 'failed'}
    return {
        arq['uuid']: states_[arq.get('state')]
        for arq in arqs
        if arq.get('state') in states_
    }


def delete(accelerator, ctxt, accel_uuids):
    if accelerator is None:
        return
    try:
        accelerator.delete_arqs(ctxt, accel_uuids)
    except Exception:
        LOG.exception('Could not delete ARQs %s', accel_uuids)
