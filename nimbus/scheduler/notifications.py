"""The decision stream: one versioned notification per scheduling decision.

Event type ``scheduler.select_destinations.decision`` (priority INFO, or
ERROR when nothing was placed), publisher ``scheduler.<host>``, on the
oslo.messaging notification topic ``notifications`` of the scheduler's bus.
The payload is built from what the decision already computed (the
:class:`~nimbus.scheduler.explain.Explanation` and the selections): no
second pass over the hosts. Its shape is in docs/contracts.md.

:class:`DecisionNotifier` is given an oslo.messaging ``Notifier`` (or None:
off); :func:`listen` tails the stream for ``nimbus decisions --follow``.
"""

import datetime

import oslo_messaging as messaging
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

EVENT_TYPE = 'scheduler.select_destinations.decision'
PAYLOAD_VERSION = '1.0'
TOPIC = 'notifications'
# The queues oslo.messaging publishes the stream to (topic.priority).
QUEUES = (TOPIC + '.info', TOPIC + '.error')


def _flavor(flavor):
    return {
        'name': flavor.name,
        'flavorid': flavor.flavorid,
        'vcpus': flavor.vcpus,
        'memory_mb': flavor.memory_mb,
        'root_gb': flavor.root_gb,
        'ephemeral_gb': flavor.ephemeral_gb,
        'swap': flavor.swap,
    }


def _outcome(placed, requested):
    if placed == 0:
        return 'failed'
    return 'scheduled' if placed >= requested else 'partial'


def build_payload(ctxt, spec, exp, result, timings, error=None):
    """The notification payload of one decision.

    ``exp``: the decision's Explanation; ``result``: per instance
    ``[selected, *alternates]`` Selection dicts (None when it failed);
    ``timings``: stage name -> seconds.
    """
    choices = exp.choices
    instances = []
    uuids = list(spec.instance_uuids)
    for idx, sels in enumerate(result or []):
        uuid = uuids[idx] if idx < len(uuids) else None
        if not sels:
            instances.append(
                {
                    'instance_uuid': uuid,
                    'host': None,
                    'reason': exp.instance_failure(uuid) or 'did not fit',
                }
            )
            continue
        weights = choices[idx] if idx < len(choices) else ()
        entry = {
            'instance_uuid': uuid,
            'host': sels[0].service_host,
            'nodename': sels[0].nodename,
            'cell_uuid': sels[0].cell_uuid,
            'weight': weights[0] if weights else None,
            'alternates': [
                {
                    'host': s.service_host,
                    'weight': (
                        weights[n + 1] if n + 1 < len(weights) else None
                    ),
                }
                for n, s in enumerate(sels[1:])
            ],
        }
        instances.append(entry)
    placed = sum(1 for i in instances if i['host'])
    requested = exp.requested or max(spec.num_instances, 1)
    retries = sum(1 for e in exp.later if e['what'] == 'claim')
    payload = {
        'nimbus_object.version': PAYLOAD_VERSION,
        'request_id': getattr(ctxt, 'request_id', None) or spec.request_id,
        'global_request_id': getattr(ctxt, 'global_request_id', None),
        'project_id': spec.project_id,
        'flavor': _flavor(spec.flavor),
        'request_groups': exp.placement_query and dict(exp.placement_query),
        'availability_zone': spec.availability_zone,
        'instance_group': (
            spec.instance_group.policy if spec.instance_group else None
        ),
        'num_instances': requested,
        'min_count': exp.min_count,
        'placement_candidates': exp.placement_candidates,
        'pre_filters': [
            {k: v for k, v in p.items() if k != 'hosts'} for p in exp.pre_steps
        ],
        'filters': exp.filter_counts(),
        'instances': instances,
        'placed': placed,
        'outcome': 'failed'
        if error is not None
        else _outcome(placed, requested),
        'claim': {
            'retries': retries,
            'failed_instances': list(exp.failed_instances),
            'later': list(exp.later[:20]),
        },
        'timings_ms': {k: round(v * 1000.0, 3) for k, v in timings.items()},
    }
    if error is not None:
        payload['message'] = str(error)
    return payload


class DecisionNotifier:
    """Emit decisions on ``notifier`` (an oslo.messaging Notifier, or None:
    off). Emitting never fails a decision."""

    def __init__(self, notifier=None):
        self.notifier = notifier

    @property
    def enabled(self):
        return self.notifier is not None

    def emit(self, ctxt, spec, exp, result, timings, error=None):
        if self.notifier is None:
            return None
        try:
            payload = build_payload(ctxt, spec, exp, result, timings, error)
            send = (
                self.notifier.error
                if payload['outcome'] == 'failed'
                else self.notifier.info
            )
            send(_context(ctxt), EVENT_TYPE, payload)
            return payload
        except Exception:  # the stream must never fail a decision
            LOG.exception('could not emit the scheduling decision')
            return None


def _context(ctxt):
    to_dict = getattr(ctxt, 'to_dict', None)
    return to_dict() if to_dict else (ctxt or {})


def make_notifier(transport, host, enabled=True):
    """A DecisionNotifier on ``transport`` (a notification transport, e.g.
    ``messaging.get_notification_transport(conf, url)``)."""
    if not enabled:
        return DecisionNotifier(None)
    notifier = messaging.Notifier(
        transport,
        publisher_id='scheduler.%s' % host,
        driver='messaging',
        topics=[TOPIC],
        serializer=messaging.NoOpSerializer(),
    )
    return DecisionNotifier(notifier)


def matches(payload, hosts=(), flavors=(), outcomes=()):
    """True when a decision passes ``nimbus decisions`` filters (each
    empty: anything)."""
    if outcomes and payload.get('outcome') not in outcomes:
        return False
    if flavors:
        flavor = payload.get('flavor') or {}
        if (
            flavor.get('name') not in flavors
            and flavor.get('flavorid') not in flavors
        ):
            return False
    if hosts:
        chosen = {i.get('host') for i in payload.get('instances') or ()}
        if not chosen & set(hosts):
            return False
    return True


def _timestamp(metadata):
    try:
        return datetime.datetime.fromisoformat(str(metadata['timestamp']))
    except (KeyError, TypeError, ValueError):
        return None


class _Endpoint:
    def __init__(self, callback, filters, since=None):
        self.callback = callback
        self.filters = filters
        self.since = since
        self.filter_rule = messaging.NotificationFilter(
            event_type=r'^scheduler\.select_destinations\.decision$'
        )

    def _handle(self, ctxt, publisher_id, event_type, payload, metadata):
        if self.since is not None:
            stamp = _timestamp(metadata)
            if stamp is not None and stamp < self.since:
                return messaging.NotificationResult.HANDLED
        if matches(payload, **self.filters):
            self.callback(payload)
        return messaging.NotificationResult.HANDLED

    info = error = _handle


def listen(
    transport,
    callback,
    hosts=(),
    flavors=(),
    outcomes=(),
    pool=None,
    since=None,
):
    """A started notification listener calling ``callback(payload)`` for
    every matching decision; ``stop()`` and ``wait()`` it. ``pool``: a
    listener pool name, so that several tails each get every message
    (oslo.messaging gives each pool its own queue; on RabbitMQ it stays
    after the listener ends). ``since``: a naive UTC datetime; decisions
    emitted before it are skipped."""
    targets = [messaging.Target(topic=TOPIC)]
    endpoint = _Endpoint(
        callback,
        {
            'hosts': tuple(hosts),
            'flavors': tuple(flavors),
            'outcomes': tuple(outcomes),
        },
        since,
    )
    listener = messaging.get_notification_listener(
        transport,
        targets,
        [endpoint],
        executor='threading',
        pool=pool,
        serializer=messaging.NoOpSerializer(),
    )
    listener.start()
    return listener
