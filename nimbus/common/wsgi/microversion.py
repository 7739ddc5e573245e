"""Microversion negotiation (``OpenStack-API-Version: <service> X.Y``)."""

import functools

import microversion_parse

from nimbus.common.wsgi import errors


@functools.total_ordering
class Version:
    """A negotiated microversion, comparable with tuples and strings."""

    __slots__ = ('major', 'minor')

    def __init__(self, major, minor):
        self.major = major
        self.minor = minor

    @classmethod
    def parse(cls, text):
        try:
            major, minor = text.split('.')
            if not (major.isdigit() and minor.isdigit()):
                raise ValueError(text)
            if len(minor) > 1 and minor.startswith('0'):
                raise ValueError(text)
            return cls(int(major), int(minor))
        except (ValueError, AttributeError) as exc:
            raise ValueError(text) from exc

    def _key(self, other):
        if isinstance(other, Version):
            return (other.major, other.minor)
        if isinstance(other, str):
            other = Version.parse(other)
            return (other.major, other.minor)
        return tuple(other)

    def __eq__(self, other):
        return (self.major, self.minor) == self._key(other)

    def __lt__(self, other):
        return (self.major, self.minor) < self._key(other)

    def __hash__(self):
        return hash((self.major, self.minor))

    def matches(self, min_version=None, max_version=None):
        if min_version is not None and self < min_version:
            return False
        if max_version is not None and self > max_version:
            return False
        return True

    def __str__(self):
        return '%d.%d' % (self.major, self.minor)

    __repr__ = __str__

    def as_tuple(self):
        return (self.major, self.minor)


# How many sets of version header values a negotiator remembers.
_AGREED_MAX = 256


class Negotiator:
    """Reads the requested version and checks it against [min, max]."""

    def __init__(
        self, service_type, min_version, max_version, legacy_headers=()
    ):
        self.service_type = service_type
        self.min = Version.parse(min_version)
        self.max = Version.parse(max_version)
        self.legacy_headers = legacy_headers
        # The headers negotiate reads, by the name it is given them under
        # and by their WSGI environ key; the versions already agreed for
        # a given set of their values.
        self._names = tuple(
            name.lower()
            for name in (microversion_parse.STANDARD_HEADER, *legacy_headers)
        )
        self._env_keys = tuple(
            'HTTP_' + name.upper().replace('-', '_') for name in self._names
        )
        self._agreed = {}

    def negotiate_environ(self, environ):
        """:meth:`negotiate` on the version headers of a WSGI ``environ``,
        read straight from it (not from every header of the request); the
        answer for the same header values is remembered (refusals are
        not: they raise a new error each time)."""
        values = tuple(environ.get(key) for key in self._env_keys)
        version = self._agreed.get(values)
        if version is None:
            version = self.negotiate(
                {
                    name: value
                    for name, value in zip(self._names, values, strict=True)
                    if value is not None
                }
            )
            if len(self._agreed) < _AGREED_MAX:
                self._agreed[values] = version
        return version

    def negotiate(self, headers):
        requested = microversion_parse.get_version(
            headers,
            service_type=self.service_type,
            legacy_headers=list(self.legacy_headers),
        )
        if requested is None:
            return self.min
        requested = requested.strip()
        if requested == 'latest':
            return self.max
        try:
            version = Version.parse(requested)
        except ValueError as exc:
            raise errors.HTTPError(
                400,
                'invalid version string: %s' % requested,
                'placement.undefined_code',
            ) from exc
        if not version.matches(self.min, self.max):
            error = errors.HTTPError(
                406,
                'Unacceptable version header: %s (supported %s to %s)'
                % (requested, self.min, self.max),
                'placement.undefined_code',
            )
            error.version_limits = (self.min, self.max)
            raise error
        return version

    def response_header(self, version):
        return '%s %s' % (self.service_type, version)
