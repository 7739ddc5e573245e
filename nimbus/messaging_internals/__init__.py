"""The one package built on oslo.messaging's private internals.

oslo.messaging's public API (transports, RPC clients and servers,
targets, notifiers) is all the rest of Nimbus uses. Three things needed
more, and live here so that a new oslo.messaging release can break only
this package, loudly:

- :mod:`.inproc`: the ``inproc://`` transport driver (a subclass of the
  driver base classes in ``oslo_messaging._drivers``), the embedded
  default's bus.
- :mod:`.multiserver`: one RPC server consuming the queues of many server
  names on one connection (the AMQP listener of the rabbit driver, its
  consumers and connection bookkeeping), for a thousand simulated hosts in
  one process.
- :mod:`.simulated`: the host groups built on it.

One more module reaches past the public API: ``nimbus.common.rpc.executor``
(the RPC servers' thread pool, one private server attribute); it checks
what it uses itself when a server is made.

setup.cfg pins oslo.messaging to the tested range. :func:`check` (run at
import) verifies that every private name these modules use is still
there, and raises :class:`IncompatibleOsloMessaging` naming what is
missing and the installed version, instead of failing later in the middle
of a build; ``tests/unit/messaging_internals`` runs it in every test run.
"""

import importlib
import importlib.metadata
import inspect

# (module, attribute path) pairs the modules of this package use.
REQUIRED = (
    ('oslo_messaging._drivers.base', 'BaseDriver'),
    ('oslo_messaging._drivers.base', 'PollStyleListener'),
    ('oslo_messaging._drivers.base', 'PollStyleListenerAdapter'),
    ('oslo_messaging._drivers.base', 'RpcIncomingMessage'),
    ('oslo_messaging._drivers.base', 'batch_poll_helper'),
    ('oslo_messaging._drivers.common', 'PURPOSE_LISTEN'),
    ('oslo_messaging._drivers.common', 'serialize_remote_exception'),
    ('oslo_messaging._drivers.common', 'deserialize_remote_exception'),
    ('oslo_messaging._drivers.amqpdriver', 'AMQPDriverBase._get_connection'),
    ('oslo_messaging._drivers.amqpdriver', 'RpcAMQPListener'),
    ('oslo_messaging._drivers.impl_rabbit', 'Consumer'),
    ('oslo_messaging._drivers.impl_rabbit', 'Connection'),
    ('oslo_messaging.rpc.dispatcher', 'RPCDispatcher'),
    ('oslo_messaging.rpc.server', 'RPCServer'),
)
# Attributes of a rabbit Connection that multiserver reads and changes
# (set in Connection.__init__, so checked in its source).
CONNECTION_ATTRIBUTES = (
    '_consumers',
    '_active_tags',
    '_new_tags',
    '_connection_lock',
)


class IncompatibleOsloMessaging(ImportError):
    """The installed oslo.messaging lacks internals Nimbus relies on."""


def _version():
    try:
        return importlib.metadata.version('oslo.messaging')
    except importlib.metadata.PackageNotFoundError:
        return 'unknown'


def missing():
    """The private names this package needs that the installed
    oslo.messaging does not have (empty when compatible)."""
    gone = []
    for module_name, path in REQUIRED:
        try:
            value = importlib.import_module(module_name)
        except ImportError:
            gone.append(module_name)
            continue
        for part in path.split('.'):
            value = getattr(value, part, None)
            if value is None:
                gone.append('%s.%s' % (module_name, path))
                break
    try:
        from oslo_messaging._drivers import impl_rabbit

        source = inspect.getsource(impl_rabbit.Connection.__init__)
    except (ImportError, AttributeError, OSError, TypeError):
        source = ''
    for attribute in CONNECTION_ATTRIBUTES:
        if 'self.%s' % attribute not in source:
            gone.append('impl_rabbit.Connection().%s' % attribute)
    return gone


def check():
    gone = missing()
    if gone:
        raise IncompatibleOsloMessaging(
            'oslo.messaging %s is not compatible with Nimbus: it lacks %s '
            '(Nimbus is tested with the range setup.cfg pins; see '
            'nimbus/messaging_internals)' % (_version(), ', '.join(gone))
        )


check()
