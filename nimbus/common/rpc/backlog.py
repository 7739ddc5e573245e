"""Notification backlogs on RabbitMQ: bounded by a broker policy, watched
from here.

oslo.messaging publishes a notification to the queue named after its
topic and priority (``notifications.info``), declaring that queue on the
first publish so that a consumer started later finds what it missed. When
no consumer ever comes, the queue keeps every message: the scheduler's
decision stream (one notification per decision) would grow RabbitMQ's
memory and disk until its alarms block every publisher of the cloud. A
queue declared with a length argument is no way out: oslo.messaging
declares it again without one, and RabbitMQ refuses the redeclaration.

RabbitMQ's own answer is a policy, which applies to a queue whatever its
declaration says: ``max-length`` keeps the newest messages and drops the
oldest (``overflow: drop-head``, the default). :func:`policy_command` is
the ``rabbitmqctl set_policy`` line for a vhost and a bound; the install
guide and the devstack plugin run it for the API bus.

:class:`BacklogWatch` checks from the scheduler that the bound holds: each
:meth:`~BacklogWatch.check` reads each queue's depth with a passive
declare (which creates nothing) and warns, with the command to run, when a
queue holds more than the bound, that is when the policy is missing. It
never takes a message off a queue. The in-process bus bounds its
notification queues by itself
(:data:`nimbus.messaging_internals.inproc.NOTIFICATION_BACKLOG`), so only
RabbitMQ URLs get a watch.
"""

import json
import shlex
import urllib.parse

import kombu
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

SCHEMES = ('rabbit', 'amqp', 'kombu')

# The policy's name on the vhost (rabbitmqctl list_policies -p VHOST).
POLICY_NAME = 'nimbus-notifications'


def broker_urls(transport_url):
    """kombu URLs, one per host of an oslo.messaging RabbitMQ
    ``transport_url`` (``rabbit://u:p@h1:5672,u:p@h2:5672/vhost``), or
    ``[]`` for any other transport."""
    parsed = urllib.parse.urlsplit(transport_url)
    if parsed.scheme not in SCHEMES:
        return []
    vhost = parsed.path[1:] if parsed.path.startswith('/') else parsed.path
    urls = []
    for netloc in parsed.netloc.split(','):
        if netloc:
            urls.append(
                'amqp://%s/%s' % (netloc, urllib.parse.quote(vhost, safe=''))
            )
    return urls


def vhost_of(transport_url):
    """The vhost a RabbitMQ ``transport_url`` names (``/`` when none)."""
    path = urllib.parse.urlsplit(transport_url).path
    return urllib.parse.unquote(path[1:]) if len(path) > 1 else '/'


def policy_pattern(queues):
    """The policy's queue-name pattern: exactly ``queues``."""
    return '^(%s)$' % '|'.join(q.replace('.', r'\.') for q in queues)


def policy_args(vhost, queues, bound):
    """``rabbitmqctl`` arguments that bound ``queues`` of ``vhost`` to the
    newest ``bound`` messages."""
    if bound < 1:
        raise ValueError('bound must be at least 1, not %r' % (bound,))
    return [
        'set_policy',
        '-p',
        vhost,
        '--apply-to',
        'queues',
        POLICY_NAME,
        policy_pattern(queues),
        json.dumps({'max-length': bound}, separators=(',', ':')),
    ]


def policy_command(vhost, queues, bound):
    """:func:`policy_args` as one shell line."""
    return ' '.join(
        shlex.quote(arg)
        for arg in ['rabbitmqctl'] + policy_args(vhost, queues, bound)
    )


class BacklogWatch:
    """Warns when one of ``queues`` on the broker of ``transport_url``
    holds more than ``bound`` messages (the max-length policy is missing
    or looser)."""

    def __init__(self, transport_url, queues, bound, connect_timeout=5.0):
        if bound < 1:
            raise ValueError('bound must be at least 1, not %r' % (bound,))
        self.urls = broker_urls(transport_url)
        self.vhost = vhost_of(transport_url)
        self.queues = tuple(queues)
        self.bound = bound
        self.connect_timeout = connect_timeout
        self._over = set()  # queues already warned about

    @property
    def enabled(self):
        return bool(self.urls)

    def check(self):
        """``{queue: depth}`` of the queues that exist; logs a warning (once
        until the queue is back under the bound) for each one over it. A
        broker that cannot be reached is logged and read again at the next
        call."""
        depths = {}
        if not self.urls:
            return depths
        try:
            with kombu.Connection(
                ';'.join(self.urls), connect_timeout=self.connect_timeout
            ) as connection:
                for queue in self.queues:
                    depth = self._depth(connection, queue)
                    if depth is not None:
                        depths[queue] = depth
        except Exception as exc:  # noqa: BLE001 - the broker is away: next time
            LOG.warning('Could not read the notification backlog: %s', exc)
            return depths
        for queue, depth in depths.items():
            if depth <= self.bound:
                self._over.discard(queue)
            elif queue not in self._over:
                self._over.add(queue)
                LOG.warning(
                    '%s holds %d messages that nobody consumes, more than '
                    '%d: RabbitMQ keeps them until its memory or disk alarm '
                    'blocks every publisher. Bound the queue with: %s',
                    queue,
                    depth,
                    self.bound,
                    policy_command(self.vhost, self.queues, self.bound),
                )
        return depths

    @staticmethod
    def _depth(connection, queue):
        channel = connection.channel()
        try:
            try:
                _name, depth, _consumers = channel.queue_declare(
                    queue=queue, passive=True
                )
            except connection.channel_errors:  # 404: not declared yet
                return None
            return depth
        finally:
            try:
                channel.close()
            except Exception:  # noqa: BLE001 - a failed passive declare closed it already
                pass
