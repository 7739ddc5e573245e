"""The access line of every WSGI request, written without oslo.log's
per-record machinery when the logging set-up allows it.

oslo.log writes one line per request through the adapter, ``findCaller``,
a ``LogRecord``, ``ContextFormatter`` (the context's values copied onto
the record twice, an ISO time with a fresh ``tzlocal()``, a new
``PercentStyle`` per record) and the handler: about a tenth of a
placement write's server CPU. :class:`AccessLog` writes the same line
itself when every handler the line reaches is a plain stream or file
handler (oslo.log's ``log_file`` without rotation, ``use_stderr``, its
stdout fallback) formatted by oslo.log's ``ContextFormatter`` (wrapped
or not in :class:`nimbus.common.secrets.MaskingFormatter`), with no
filter on the way and a format string naming only fields it knows. The
line is the one the formatter would write: the same configured format
string (``logging_context_format_string``, or the default format string
when no request id is known), the same ``log_date_format``, the same
context values and user identity, masked the same way, written to the
same streams under each handler's lock. Any other set-up (a log config
file's own handlers or filters, syslog, journal, rotation, JSON, colour,
a field such as ``%(lineno)d`` or ``%(isotime)s``) takes oslo.log's own
path, unchanged.
"""

import logging
import logging.handlers
import os
import re
import sys
import threading
import time

from oslo_context import context as oslo_context
from oslo_log import formatters

from nimbus.common import secrets

# The handler classes whose emit is exactly: (reopen the watched file,)
# format, write the line and the terminator, flush.
_PLAIN_HANDLERS = (
    logging.StreamHandler,
    logging.FileHandler,
    logging.handlers.WatchedFileHandler,
)
_FIELD = re.compile(r'%\(([^)]*)\)')
# ContextFormatter's defaults for fields no record or context set.
_BLANK = ('instance', 'color', 'user_identity', 'resource', 'user_name',
          'project_name', 'global_request_id')  # fmt: skip
# The LogRecord fields an INFO line of this module's logger is given
# (as LogRecord sets them; Python < 3.13); any other field a format string
# names must come from the context, or the line takes oslo.log's path.
_BASE = {
    'name': lambda logger, created: logger.name,
    'levelname': lambda logger, created: 'INFO',
    'levelno': lambda logger, created: logging.INFO,
    'created': lambda logger, created: created,
    'msecs': lambda logger, created: (
        int((created - int(created)) * 1000) + 0.0
    ),
    'process': lambda logger, created: os.getpid(),
    'thread': lambda logger, created: threading.get_ident(),
    'threadName': lambda logger, created: threading.current_thread().name,
}
# Set by Formatter.format after everything else.
_LATE = frozenset(('message', 'asctime', 'error_summary'))


class _Dash(dict):
    """oslo.log's user identity mapping: a false value reads as '-'."""

    def __getitem__(self, key):
        return dict.get(self, key, None) or '-'


class _Target:
    """One handler the line reaches: its formatter's settings."""

    __slots__ = (
        'handler', 'conf', 'masks', 'datefmt', 'project', 'version',
    )  # fmt: skip

    def __init__(self, handler, conf, masks, inner):
        self.handler = handler
        self.conf = conf
        self.masks = masks
        self.datefmt = inner.datefmt
        self.project = inner.project
        self.version = inner.version


def _target(handler):
    """A :class:`_Target` for ``handler``, or None when its line must
    take oslo.log's path."""
    if type(handler) not in _PLAIN_HANDLERS or handler.filters:
        return None
    formatter, masks = handler.formatter, 0
    while type(formatter) is secrets.MaskingFormatter:
        formatter, masks = formatter.inner, masks + 1
    if (
        type(formatter) is not formatters.ContextFormatter
        or formatter.conf is None
        or formatter.converter is not time.localtime
        or not formatter.datefmt
    ):
        return None
    return _Target(handler, formatter.conf, masks, formatter)


def _plan(logger):
    """The targets of an INFO line of ``logger``, or None (oslo.log's
    path)."""
    if sys.version_info >= (3, 13) or not logging.logProcesses:
        # 3.13 derives msecs from time_ns(); keep to what is mirrored here
        return None
    if not logging.logThreads:
        return None
    targets, current = [], logger
    while current:
        if current.filters or current.disabled:
            return None
        for handler in current.handlers:
            if logging.INFO >= handler.level:
                target = _target(handler)
                if target is None:
                    return None
                targets.append(target)
        if not current.propagate:
            break
        current = current.parent
    return targets or None


class AccessLog:
    """Writes ``logger``'s access line (through ``adapter``, oslo.log's
    path, when :func:`_plan` says no)."""

    MSG = '%s "%s %s%s" status: %s microversion: %s'

    def __init__(self, adapter):
        self.adapter = adapter
        self.logger = adapter.logger
        self._key = None
        self._targets = None
        self._lock = threading.Lock()
        self._second = None  # (whole second, datefmt, its text)
        self._templates = {}  # format string -> the field names it uses
        self.fast = 0  # lines written here (tests read it)

    def _current_targets(self):
        chain, current = [], self.logger
        while current:
            chain.append(len(current.filters))
            chain.append(current.disabled)
            for handler in current.handlers:
                chain.append(handler)
                chain.append(handler.level)
                chain.append(handler.formatter)
                chain.append(len(handler.filters))
            if not current.propagate:
                break
            current = current.parent
        key = (
            tuple(chain),
            os.getpid(),
            logging.root.manager.disable,
            logging.logProcesses,
            logging.logThreads,
        )
        if key != self._key:
            with self._lock:
                self._targets = _plan(self.logger)
                self._key = key
        return self._targets

    def _fields(self, fmt):
        fields = self._templates.get(fmt, False)
        if fields is False:
            fields = self._templates[fmt] = frozenset(_FIELD.findall(fmt))
        return fields

    def _asctime(self, created, datefmt):
        whole = int(created)
        cached = self._second
        if cached is not None and cached[0] == whole and cached[1] == datefmt:
            return cached[2]
        text = time.strftime(datefmt, time.localtime(created))
        self._second = (whole, datefmt, text)
        return text

    def _line(self, target, message, created, context, logging_values):
        # In ContextFormatter's order: the record's own fields, then the
        # context's values over them, then the formatter's defaults.
        conf = target.conf
        values = dict(logging_values) if context else {}
        values.setdefault('project', target.project)
        values.setdefault('version', target.version)
        values['instance'] = ''
        for key in _BLANK:
            values.setdefault(key, '')
        if context:
            values['user_identity'] = conf.logging_user_identity_format % (
                _Dash(logging_values)
            )
        if values.get('request_id'):
            fmt = conf.logging_context_format_string
        else:
            fmt = conf.logging_default_format_string
        for name in self._fields(fmt):
            if name in values or name in _LATE:
                continue
            field = _BASE.get(name)
            if field is None:
                return None
            values[name] = field(self.logger, created)
        values['error_summary'] = '-' if '%(error_summary)s' in fmt else ''
        values['message'] = message
        if '%(asctime)' in fmt:
            values['asctime'] = self._asctime(created, target.datefmt)
        line = fmt % values
        for _ in range(target.masks):
            line = secrets.mask(line)
        return line

    def _oslo_line(self, args):
        # LOG.info's line, its call site (%(lineno)d, %(funcName)s) being
        # write's caller, as when the caller wrote LOG.info itself.
        msg, kwargs = self.adapter.process(self.MSG, {})
        self.logger.info(msg, *args, stacklevel=3, **kwargs)

    def write(self, remote, method, path, query, status, version):
        """One access line, as ``LOG.info(MSG, ...)`` would write it."""
        args = (remote, method, path, query, status, version)
        logger = self.logger
        if logger.disabled or not logger.isEnabledFor(logging.INFO):
            return
        targets = self._current_targets()
        if not targets:
            self._oslo_line(args)
            return
        context = oslo_context.get_current()
        if context and not isinstance(context, oslo_context.RequestContext):
            self._oslo_line(args)
            return
        if context and (
            getattr(context, 'instance', None)
            or getattr(context, 'instance_uuid', None)
            or getattr(context, 'resource_uuid', None)
        ):
            self._oslo_line(args)
            return
        for target in targets:
            if target.handler.stream is None:
                self._oslo_line(args)
                return
        message = self.MSG % args
        created = time.time()
        logging_values = context.get_logging_values() if context else None
        lines = []
        try:
            for target in targets:
                line = self._line(
                    target, message, created, context, logging_values
                )
                if line is None:
                    self._oslo_line(args)
                    return
                lines.append(line)
        except (TypeError, KeyError, ValueError):
            # oslo.log's formatter says what went wrong in its own words
            self._oslo_line(args)
            return
        self.fast += 1
        for target, line in zip(targets, lines, strict=True):
            _emit(target.handler, line, logger, message)


def _emit(handler, line, logger, message):
    """``handler.handle`` of an already formatted line."""
    handler.acquire()
    try:
        if isinstance(handler, logging.handlers.WatchedFileHandler):
            handler.reopenIfNeeded()
        handler.stream.write(line + handler.terminator)
        handler.flush()
    except RecursionError:
        raise
    except Exception:  # noqa: BLE001 - as logging.StreamHandler.emit
        handler.handleError(
            logger.makeRecord(
                logger.name, logging.INFO, __file__, 0, message, None, None
            )
        )
    finally:
        handler.release()
