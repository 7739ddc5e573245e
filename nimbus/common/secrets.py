"""Keeping passwords out of log lines, error messages and printed output.

Transport URLs (``rabbit://user:pass@host:5672/vhost``, several hosts
separated by commas) and database URLs
(``mysql+pymysql://root:secret@db/nimbus``) carry their password in the
URL's userinfo. :func:`mask_url` hides it; :func:`mask` hides it in any
text, together with the ``password=...`` forms that
``oslo_utils.strutils.mask_password`` knows. :func:`install` wraps the
formatter of every handler oslo.log set up in a :class:`MaskingFormatter`,
so a line that forgets to mask its URL (or a traceback that quotes one) is
still masked on its way out.
"""

import logging
import re
import sys

from oslo_utils import strutils

MASK = '***'
# The keys mask_password looks for (empty if oslo.utils renames them: then
# every text goes to mask_password).
_SANITIZE_KEYS = tuple(getattr(strutils, '_SANITIZE_KEYS', ()))
# Short pieces most of those keys contain ('pass' is in 'adminpass',
# 'password', 'passphrase'...): a text holding none of the pieces (nor any
# key that contains none) holds no key, so a few substring searches decide
# what one search per key (35 of them) would.
_KEY_PIECES = ('pass', 'key', 'token', 'secret', 'pswd')


def _anchors(keys):
    out = []
    for key in keys:
        piece = next((p for p in _KEY_PIECES if p in key), key)
        if piece not in out:
            out.append(piece)
    return tuple(out)


_ANCHORS = _anchors(_SANITIZE_KEYS)

# ``scheme://`` then a userinfo ``user:password@``; in a transport URL each
# further host may carry its own after a comma. The user part stops at
# ':', '/', '@', ',' or whitespace; the password at '@' preceded by no '/'
# or whitespace (a password may contain ':' and ',' in practice, but '@'
# and '/' are percent-encoded in a valid URL).
_USERINFO = re.compile(
    r'(?P<head>(?:[A-Za-z][A-Za-z0-9+.\-]*://|,)[^:/@,\s\'"]*:)'
    r'(?P<password>[^@/\s\'"]*)@'
)


def mask_url(url):
    """``url`` with the password of every userinfo replaced by ``***``
    (a URL without one comes back unchanged; None gives '')."""
    if url is None:
        return ''
    return _USERINFO.sub(lambda m: m.group('head') + MASK + '@', str(url))


def mask(text):
    """``text`` with URL passwords and ``password=...`` forms masked."""
    if text is None:
        return text
    text = str(text)
    if '@' in text:
        text = mask_url(text)
    # It masks nothing when no key it knows (password, token, ...) is in
    # the text; it looks for each key in a fresh lower-case copy, so one
    # copy here, searched for a piece of every key, decides that case
    # (the usual one: every access log line) at a small part of the cost.
    if _ANCHORS:
        lower = text.lower()
        for piece in _ANCHORS:
            if piece in lower:
                break
        else:
            return text
    return strutils.mask_password(text, secret=MASK)


class MaskingFormatter(logging.Formatter):
    """Wraps a handler's formatter and masks the text it produced: the
    message, the traceback and oslo.log's error summary alike."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record):
        return mask(self.inner.format(record))

    def __getattr__(self, name):
        return getattr(self.inner, name)


def install(logger=None):
    """Wrap the formatter of every handler of ``logger`` (the root logger
    by default) in a :class:`MaskingFormatter`; idempotent. Call it after
    oslo.log's ``setup``, which replaces the handlers."""
    logger = logger or logging.getLogger()
    for handler in logger.handlers:
        if not isinstance(handler.formatter, MaskingFormatter):
            handler.setFormatter(MaskingFormatter(handler.formatter))
    return logger


def masked_excepthook(exc_type, exc, tb):
    """A ``sys.excepthook`` that prints an uncaught exception masked."""
    import traceback

    text = ''.join(traceback.format_exception(exc_type, exc, tb))
    sys.stderr.write(mask(text))


def exit_message(prefix, exc):
    """A one-line, masked message for ``sys.exit``."""
    return mask('%s: %s' % (prefix, exc))


def setup_logging(conf, project='nimbus'):
    """oslo.log's ``setup`` and then :func:`install`: what every Nimbus
    process calls, so no handler writes an unmasked password. Uncaught
    exceptions are printed masked too."""
    from oslo_log import log as oslo_logging

    oslo_logging.setup(conf, project)
    install()
    sys.excepthook = masked_excepthook
