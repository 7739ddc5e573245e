"""Microversion negotiation as Cyborg's API does it, around the app.

The shared negotiation (:mod:`nimbus.common.wsgi.microversion`) answers
an out-of-range version with 406; Cyborg also answers 406 where it would
answer 400 or ignore the header, and says its range on every answer:

- every response (errors, 401 and discovery included) carries
  ``OpenStack-API-Minimum-Version`` and ``OpenStack-API-Maximum-Version``;
- ``OpenStack-API-Version: accelerator <not a version>`` is a 406;
- an ``OpenStack-API-Version`` naming another service (``compute 2.1``)
  is a 406 (Cyborg reads such a header as a bare version and cannot
  parse it);
- a bare ``OpenStack-API-Version: 2.1``, which Cyborg still takes (with a
  warning), is read as ``accelerator 2.1``.

:func:`wrap` puts this in front of the WSGI callable.
"""

import re

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

SERVICE_TYPE = 'accelerator'
_HEADER = 'HTTP_OPENSTACK_API_VERSION'
_VERSION = re.compile(r'^(latest|\d+\.\d+)$', re.IGNORECASE)


def _requested(raw):
    """``(value to pass on, problem)`` for a raw ``OpenStack-API-Version``
    header (several comma-separated ``<service> <version>`` entries)."""
    entries = [e.strip() for e in raw.split(',') if e.strip()]
    ours, others = None, []
    for entry in entries:
        service, _, version = entry.partition(' ')
        if not version:
            # a bare version, as older clients send
            if _VERSION.match(service):
                ours = ours or service
                continue
            return None, 'Invalid value for OpenStack-API-Version header'
        if service.lower() == SERVICE_TYPE:
            ours = version.strip()
        else:
            others.append(entry)
    if ours is None:
        return None, (
            'OpenStack-API-Version %r does not name the %s service'
            % (raw, SERVICE_TYPE)
        )
    if not _VERSION.match(ours):
        return None, 'Invalid value for OpenStack-API-Version header'
    return '%s %s' % (SERVICE_TYPE, ours), None


def wrap(app, min_version, max_version):
    """``app`` with Cyborg's version headers and 406s (see module doc)."""
    limits = [
        ('OpenStack-API-Minimum-Version', min_version),
        ('OpenStack-API-Maximum-Version', max_version),
    ]

    def versioned(environ, start_response):
        def start(status, headers, exc_info=None):
            names = {name.lower() for name, _value in headers}
            headers = list(headers) + [
                item for item in limits if item[0].lower() not in names
            ]
            return start_response(status, headers, exc_info)

        raw = environ.get(_HEADER)
        if raw is not None:
            value, problem = _requested(raw)
            if problem:
                body = app.error_body(
                    406,
                    '%s (supported: %s to %s)'
                    % (problem, min_version, max_version),
                )
                start(
                    '406 Not Acceptable',
                    [
                        ('Content-Type', 'application/json'),
                        ('Content-Length', str(len(body))),
                        ('Vary', 'OpenStack-API-Version'),
                    ],
                )
                return [body]
            environ[_HEADER] = value
        return app(environ, start)

    versioned.error_body = app.error_body
    return versioned
