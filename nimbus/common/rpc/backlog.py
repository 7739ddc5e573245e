"""Notification backlogs on RabbitMQ: keep the newest, drop the rest.

oslo.messaging publishes a notification to the queue named after its
topic and priority (``notifications.info``), declaring that queue on the
first publish so that a consumer started later finds what it missed. When
no consumer ever comes, the queue keeps every message: the scheduler's
decision stream (one notification per decision) would grow RabbitMQ's
memory and disk without bound until its alarms block every publisher of
the cloud. A queue declared with a length limit is no way out: oslo.messaging
declares it again without one, and RabbitMQ refuses the redeclaration.

:class:`BacklogTrimmer` bounds such queues from outside: each
:meth:`~BacklogTrimmer.trim` reads a queue's depth (a passive declare,
which creates nothing) and takes the oldest messages beyond ``keep`` off
its head. A consumer that keeps up leaves nothing to trim. The in-process
bus bounds its notification queues by itself
(:data:`nimbus.messaging_internals.inproc.NOTIFICATION_BACKLOG`), so only RabbitMQ
URLs get a trimmer.
"""

import urllib.parse

import kombu
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

SCHEMES = ('rabbit', 'amqp', 'kombu')


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


class BacklogTrimmer:
    """Keeps at most ``keep`` messages waiting in each of ``queues`` on the
    broker of ``transport_url``."""

    def __init__(self, transport_url, queues, keep, connect_timeout=5.0):
        if keep < 1:
            raise ValueError('keep must be at least 1, not %r' % (keep,))
        self.urls = broker_urls(transport_url)
        self.queues = tuple(queues)
        self.keep = keep
        self.connect_timeout = connect_timeout

    @property
    def enabled(self):
        return bool(self.urls)

    def trim(self):
        """Drop the oldest messages beyond ``keep`` from every queue:
        ``{queue: dropped}``. A queue that does not exist yet is left
        alone; a broker that cannot be reached is logged and tried again at
        the next call."""
        dropped = {}
        if not self.urls:
            return dropped
        try:
            with kombu.Connection(
                ';'.join(self.urls), connect_timeout=self.connect_timeout
            ) as connection:
                for queue in self.queues:
                    dropped[queue] = self._trim_one(connection, queue)
        except Exception as exc:  # the broker is away: next time
            LOG.warning('Could not trim the notification backlog: %s', exc)
        for queue, count in dropped.items():
            if count:
                LOG.info(
                    'Dropped the %d oldest messages of %s (nobody consumed '
                    'them; %d kept)',
                    count,
                    queue,
                    self.keep,
                )
        return dropped

    def _trim_one(self, connection, queue):
        channel = connection.channel()
        try:
            try:
                _name, depth, _consumers = channel.queue_declare(
                    queue=queue, passive=True
                )
            except connection.channel_errors:  # 404: not declared yet
                return 0
            dropped = 0
            for _ in range(max(0, depth - self.keep)):
                # no_ack: taken off the head for good, in one round trip.
                if channel.basic_get(queue=queue, no_ack=True) is None:
                    break  # a consumer took the rest meanwhile
                dropped += 1
            return dropped
        finally:
            try:
                channel.close()
            except Exception:  # a failed passive declare closed it already
                pass
