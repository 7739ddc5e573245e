"""RPC plumbing shared by every service.

- :func:`get_transport` turns a URL into an oslo.messaging transport: the
  ``rabbit://`` driver (kombu) in production, ``inproc://`` in one process.
- :func:`get_client` / :func:`get_server` build RPC clients and servers with
  the :class:`Serializer` that carries the :class:`RequestContext`.
- :func:`expose` wraps manager methods so a malformed message is rejected
  with :class:`InvalidMessage` (a call) or logged and dropped (a cast), and
  the server keeps serving.
"""

import contextlib
import functools
import inspect
import logging as logging_std
import threading

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging

from nimbus.common.objects import base as objects_base
from nimbus.common import secrets
from nimbus.common.rpc import executor
from nimbus.common.rpc.clients import HostClients  # noqa: F401
from nimbus.common.rpc.clients import Serializer
from nimbus.common.rpc.clients import get_client  # noqa: F401

LOG = logging.getLogger(__name__)

ALLOWED_EXMODS = [
    'nimbus.common.exception',
    'nimbus.common.rpc',
    'nimbus.scheduler.exception',
    'nimbus.conductor.exception',
    'nimbus.compute.exception',
    'nimbus.accelerator.agent.exception',
]

# id(conf) -> (conf, {url: transport}). The entry holds its conf, so the id
# cannot be reused by another conf while the entry exists, and the lookup
# also checks identity.
_TRANSPORTS = {}
_TRANSPORTS_LOCK = threading.Lock()
# TransportURL.parse needs a ConfigOpts only for its defaults.
_URL_CONF = cfg.ConfigOpts()


class InvalidMessage(Exception):
    """An RPC message whose arguments do not fit the method."""


@contextlib.contextmanager
def arriving(method=None, also=()):
    """Around an endpoint's conversion of its message's contracts: a
    MalformedPrimitive (or an exception of the types ``also``) raised
    inside is an :class:`InvalidMessage`, its text prefixed with
    ``method`` when given."""
    try:
        yield
    except (objects_base.MalformedPrimitive, *also) as exc:
        text = '%s: %s' % (method, exc) if method else str(exc)
        raise InvalidMessage(text) from exc


_DEFAULT_PORTS = {'rabbit': 5672, 'kombu': 5672, 'amqp': 5672}


def bus_of(url):
    """What identifies the broker and virtual host a transport URL names:
    ``(driver, frozenset((host, port), ...), vhost)``.

    Two URLs with the same driver and vhost that share a broker host reach
    the same queues (RabbitMQ queue names are per vhost, whatever the user
    or options in the URL). Raises ValueError for a URL that does not parse.
    """
    try:
        parsed = messaging.TransportURL.parse(_URL_CONF, url)
    except (messaging.InvalidTransportURL, ValueError) as exc:
        raise ValueError(
            'invalid transport URL %s: %s' % (mask_url(url), exc)
        ) from exc
    driver = (parsed.transport or '').split('+')[0]
    port = _DEFAULT_PORTS.get(driver)
    hosts = frozenset(
        ((h.hostname or '').lower(), h.port or port) for h in parsed.hosts
    )
    vhost = parsed.virtual_host or ''
    if driver != 'inproc' and vhost in ('', '/'):
        vhost = '/'  # RabbitMQ's default vhost, however it is spelled
    return driver, hosts, vhost


def mask_url(url):
    """``url`` with its passwords replaced by ``***`` (for messages); see
    :func:`nimbus.common.secrets.mask_url`."""
    return secrets.mask_url(url)


def same_bus(url_a, url_b):
    """True when two transport URLs reach the same broker vhost."""
    driver_a, hosts_a, vhost_a = bus_of(url_a)
    driver_b, hosts_b, vhost_b = bus_of(url_b)
    if driver_a != driver_b or vhost_a != vhost_b:
        return False
    if not hosts_a or not hosts_b:
        return hosts_a == hosts_b
    return bool(hosts_a & hosts_b)


EMBEDDED_URL = 'inproc://'


class NoBroker(ValueError):
    """A daemon was given no broker: only the in-process bus."""


def transport_url_of(conf):
    """The bus of the service ``conf`` configures.

    ``[rpc] transport_url`` when set, else ``[DEFAULT] transport_url`` (the
    option every oslo.messaging service knows) when set in a config file or
    by an override, else ``inproc://``: the in-process bus of the
    all-in-one runner. oslo.messaging's default for the latter
    (``rabbit://``, a guest on localhost) is never used silently.
    """
    if conf.rpc.transport_url:
        return conf.rpc.transport_url
    try:
        location = conf.get_location('transport_url')
    except cfg.NoSuchOptError:
        location = None
    if (
        location is not None
        and location.location != cfg.Locations.opt_default
        and conf.transport_url
    ):
        return conf.transport_url
    return EMBEDDED_URL


def require_broker(conf, prog):
    """The bus URL of a daemon; :class:`NoBroker` (a one-line reason) when
    it would be the in-process bus, which no other process can reach."""
    url = transport_url_of(conf)
    if bus_of(url)[0] != 'inproc':
        return url
    if conf.rpc.transport_url or url != EMBEDDED_URL:
        reason = 'transport_url is %s' % mask_url(url)
    else:
        reason = 'no transport_url is set'
    raise NoBroker(
        '%s: %s; the in-process bus works only inside nimbus all-in-one. '
        'Set [DEFAULT] transport_url = rabbit://USER:PASS@HOST:5672/VHOST '
        'in the config file' % (prog, reason)
    )


class _ClosingChannelNotice(logging_std.Filter):
    """Drops py-amqp's "Received method (60, 30) during closing channel"
    warning: a broker's Basic.Cancel for a consumer whose channel this
    process is closing at shutdown (its auto-delete queue went with it).
    Nothing is lost: unacknowledged messages go back to their queue."""

    def filter(self, record):
        try:
            return not (
                str(record.msg).startswith('Received method')
                and tuple(record.args[0]) == (60, 30)
            )
        except (TypeError, IndexError, KeyError):
            return True


_AMQP_FILTER = _ClosingChannelNotice()


def get_transport(conf, url=None):
    """The RPC transport for ``url`` (default :func:`transport_url_of`).

    Transports are cached per config object and URL within a process:
    every service built from one conf on the same bus shares one connection
    pool, while each simulated compute of the all-in-one runner (a conf of
    its own, as on its own machine) has its own. :func:`cleanup_transports`
    closes them.
    """
    url = url or transport_url_of(conf)

    def make():
        logging_std.getLogger('amqp').addFilter(_AMQP_FILTER)
        return messaging.get_rpc_transport(
            conf, url=url, allowed_remote_exmods=ALLOWED_EXMODS
        )

    return _cached(conf, url, make)


def get_notification_transport(conf, url=None):
    """The notification transport for ``url`` (default
    :func:`transport_url_of`), cached like :func:`get_transport`."""
    url = url or transport_url_of(conf)
    return _cached(
        conf,
        'notifications:' + url,
        lambda: messaging.get_notification_transport(conf, url=url),
    )


def _cached(conf, key, make):
    """The transport cached for ``conf`` under ``key``; ``make()``'s, kept,
    when there is none yet."""
    with _TRANSPORTS_LOCK:
        entry = _TRANSPORTS.get(id(conf))
        if entry is None or entry[0] is not conf:
            entry = _TRANSPORTS[id(conf)] = (conf, {})
        transport = entry[1].get(key)
        if transport is None:
            transport = entry[1][key] = make()
        return transport


def bus_name(transport):
    """The URL ``transport`` was made for, its password masked (for log
    lines), or '?' for a transport not made by :func:`get_transport`."""
    with _TRANSPORTS_LOCK:
        for _conf, transports in _TRANSPORTS.values():
            for url, known in transports.items():
                if known is transport:
                    return secrets.mask_url(url)
    return '?'


def transports_of(conf):
    """The cached transports of ``conf``: ``{url: transport}``."""
    with _TRANSPORTS_LOCK:
        entry = _TRANSPORTS.get(id(conf))
        return dict(entry[1]) if entry and entry[0] is conf else {}


def cleanup_transports(conf=None):
    """Close the transports of ``conf`` (of every conf when None) and
    forget them: RabbitMQ connections and their heartbeat threads end."""
    with _TRANSPORTS_LOCK:
        if conf is None:
            entries = list(_TRANSPORTS.values())
            _TRANSPORTS.clear()
        else:
            entry = _TRANSPORTS.get(id(conf))
            entries = [entry] if entry and entry[0] is conf else []
            if entries:
                del _TRANSPORTS[id(conf)]

    def close(transport):
        try:
            transport.cleanup()
        except Exception:  # best effort at exit
            LOG.debug('transport cleanup failed', exc_info=True)

    # At once: each waits up to a poll interval for its reply listener.
    threads = [
        threading.Thread(target=close, args=(transport,), daemon=True)
        for _conf, transports in entries
        for transport in transports.values()
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def get_server(transport, topic, endpoints, server, version='1.0'):
    """An RPC server whose endpoints answer only the methods they
    :func:`expose`; any other method name (``shutdown``, a typo, a method
    of a newer version) is refused with oslo.messaging's NoSuchMethod. Its
    thread pool stops without waiting out its idle workers' poll
    (:mod:`nimbus.common.rpc.executor`)."""
    target = messaging.Target(topic=topic, server=server, version=version)
    return executor.use_prompt_executor(
        messaging.get_rpc_server(
            transport,
            target,
            [_RemoteEndpoint(e) for e in endpoints],
            executor='threading',
            serializer=Serializer(),
            access_policy=messaging.ExplicitRPCAccessPolicy,
        )
    )


_REMOTE = threading.local()


class _RemoteEndpoint:
    """What an RPC server dispatches to: the endpoint, whose exposed
    methods run knowing their caller is remote. A refused message and an
    expected exception then reach the caller through oslo.messaging's
    ExpectedException (so the server logs no traceback for them), while an
    in-process caller of the same method gets the exception itself."""

    def __init__(self, endpoint):
        self._endpoint = endpoint
        # name -> the remote wrapper of an exposed method, made once
        # (oslo.messaging's dispatcher looks a method up three times a
        # message)
        self._remote = {}

    def __getattr__(self, name):
        remote = self._remote.get(name)
        if remote is not None:
            return remote
        attr = getattr(self._endpoint, name)
        if not getattr(attr, 'exposed', False):
            return attr

        @functools.wraps(attr)
        def remote(ctxt, **kwargs):
            outer = getattr(_REMOTE, 'active', False)
            _REMOTE.active = True
            try:
                return attr(ctxt, **kwargs)
            finally:
                _REMOTE.active = outer

        self._remote[name] = remote
        return remote


def _answer(exc):
    """Raise ``exc`` (being handled) the way its caller should get it."""
    if getattr(_REMOTE, 'active', False):
        raise messaging.ExpectedException()
    raise exc


def _type_names(expected):
    if not isinstance(expected, tuple):
        expected = (expected,)
    return ' or '.join(
        'null' if t is type(None) else t.__name__ for t in expected
    )


def _fits(signature):
    """A quick test of a message's keyword arguments against an endpoint
    method's ``signature`` (self, ctxt, then keywords): True when they
    surely bind (known names, every argument without a default given);
    False sends them to ``signature.bind``, which words the refusal."""
    params = list(signature.parameters.values())[2:]
    if any(
        p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY)
        for p in params
    ):
        return lambda kwargs: False
    names = frozenset(p.name for p in params)
    needed = frozenset(p.name for p in params if p.default is p.empty)

    def fits(kwargs):
        return names.issuperset(kwargs) and needed.issubset(kwargs)

    return fits


def expose(cast=False, required=(), types=None, expected=()):
    """Make an endpoint method callable over RPC, and guard it against
    malformed messages.

    ``required`` names arguments that must be present and not None;
    ``types`` maps an argument to the type (or tuple of types) its value
    must have when it is not None. Missing, unknown or mistyped arguments,
    and an :class:`InvalidMessage` the method itself raises while checking
    deeper, are refused: a call answers the caller with InvalidMessage
    (logged as a warning here, not as a server error); a cast is logged and
    dropped, because nobody waits for an answer. Either way the server
    keeps serving. Only exposed methods are dispatched (see
    :func:`get_server`).

    ``expected`` lists exceptions that are answers, not failures (the
    scheduler's NoValidHost): the caller receives them as usual, and the
    RPC server does not log them as errors with a traceback (the method
    logs what it wants to say about them).
    """
    types = dict(types or {})
    expected = tuple(expected)

    def decorator(func):
        signature = inspect.signature(func)
        fits = _fits(signature)

        def check(kwargs):
            missing = [name for name in required if kwargs.get(name) is None]
            if missing:
                raise InvalidMessage(
                    '%s: missing argument(s) %s'
                    % (func.__name__, ', '.join(missing))
                )
            if not fits(kwargs):
                try:
                    signature.bind(None, None, **kwargs)
                except TypeError as exc:
                    raise InvalidMessage(
                        '%s: %s' % (func.__name__, exc)
                    ) from exc
            for name, expected in types.items():
                value = kwargs.get(name)
                if value is not None and (
                    not isinstance(value, expected)
                    or isinstance(value, bool)
                    and bool
                    not in (
                        expected
                        if isinstance(expected, tuple)
                        else (expected,)
                    )
                ):
                    raise InvalidMessage(
                        '%s: %s must be %s, not %s'
                        % (
                            func.__name__,
                            name,
                            _type_names(expected),
                            type(value).__name__,
                        )
                    )

        @functools.wraps(func)
        def wrapper(self, ctxt, **kwargs):
            try:
                check(kwargs)
                return func(self, ctxt, **kwargs)
            except InvalidMessage as exc:
                if cast:
                    LOG.error('Dropped malformed cast: %s', exc)
                    return None
                LOG.warning('Refused malformed call: %s', exc)
                # Answered to the caller as InvalidMessage, without the
                # server logging it as its own failure.
                _answer(exc)
            except expected as exc:
                _answer(exc)

        wrapper.exposed = True
        wrapper.validates = {
            'cast': cast,
            'required': tuple(required),
            'types': types,
        }
        return wrapper

    return decorator
