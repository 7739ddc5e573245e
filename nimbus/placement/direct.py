"""Placement without an HTTP server: ``requests`` straight into the app.

``PlacementDirect(conf)`` is a context manager yielding a
:class:`requests.Session` whose transport adapter calls the placement WSGI
app in this process (no sockets). Relative URLs (``/resource_providers``)
are accepted. Offline tools (an upgrade script moving inventories with
POST /reshaper) and tests use the very same REST client code this way, with
schema validation and microversions intact. Requests carry a noauth2
identity with the admin and service roles unless headers say otherwise.
"""

import io
import urllib.parse

import requests
from requests import adapters
from requests import structures

from nimbus.placement.objects import provider_trees
from nimbus.placement import wsgi

BASE_URL = 'http://placement.direct'


class _WSGIAdapter(adapters.BaseAdapter):
    def __init__(self, app):
        super().__init__()
        self.app = app

    def send(
        self,
        request,
        stream=False,
        timeout=None,
        verify=True,
        cert=None,
        proxies=None,
    ):
        url = urllib.parse.urlsplit(request.url)
        body = request.body or b''
        if isinstance(body, str):
            body = body.encode('utf-8')
        environ = {
            'REQUEST_METHOD': request.method,
            'SCRIPT_NAME': '',
            'PATH_INFO': urllib.parse.unquote(url.path) or '/',
            'QUERY_STRING': url.query,
            'SERVER_NAME': 'placement.direct',
            'SERVER_PORT': '80',
            'SERVER_PROTOCOL': 'HTTP/1.1',
            'wsgi.version': (1, 0),
            'wsgi.url_scheme': 'http',
            'wsgi.input': io.BytesIO(body),
            'wsgi.errors': io.StringIO(),
            'wsgi.multithread': True,
            'wsgi.multiprocess': False,
            'wsgi.run_once': False,
            'CONTENT_LENGTH': str(len(body)),
        }
        for name, value in request.headers.items():
            key = name.upper().replace('-', '_')
            if key == 'CONTENT_TYPE':
                environ['CONTENT_TYPE'] = value
            elif key != 'CONTENT_LENGTH':
                environ['HTTP_' + key] = value
        captured = {}

        def start_response(status, headers, exc_info=None):
            captured['status'] = status
            captured['headers'] = headers

        chunks = self.app(environ, start_response)
        try:
            data = b''.join(chunks)
        finally:
            if hasattr(chunks, 'close'):
                chunks.close()
        resp = requests.Response()
        resp.status_code = int(captured['status'].split()[0])
        resp.reason = captured['status'].partition(' ')[2]
        resp.headers = structures.CaseInsensitiveDict(captured['headers'])
        resp.raw = io.BytesIO(data)
        resp._content = data
        resp.url = request.url
        resp.request = request
        resp.encoding = 'utf-8'
        return resp

    def close(self):
        pass


def mount(session, url, app):
    """Send ``session``'s requests to ``url`` (a prefix, e.g. the URL a
    placement API of this process serves) straight into ``app``, the
    WSGI app behind it: the same app, middleware, validation and
    microversions, without the socket, the HTTP server's thread and the
    parsing. The all-in-one cloud's simulated hosts reach its placement
    this way. Returns ``session``.

    The session stops reading the environment (``trust_env``: proxy
    variables, ``.netrc``, CA bundles): no proxy or certificate is
    involved on this path, and looking them up took a quarter of the CPU
    of each in-process request (``getproxies_environment`` walks the
    whole environment twice per request)."""
    session.mount(url.rstrip('/') + '/', _WSGIAdapter(app))
    session.trust_env = False
    return session


def tree_writer(app):
    """``create(providers) -> {uuid: generation}``: many new providers
    with their inventories and traits written in one transaction of
    ``app``'s database (:func:`nimbus.placement.objects.provider_trees.
    create_many`, which says what ``providers`` holds and what it
    raises), for the callers of this process that register many hosts'
    trees at once (the all-in-one's simulated hosts and accelerator
    agents). None when ``app`` is no placement app of this process (made
    by :func:`nimbus.placement.wsgi.make_app`). It is no API route: no
    client of Placement's API sees a difference."""
    state = getattr(app, 'placement_state', None)
    if state is None:
        return None

    def create(providers):
        return state.pdb.write(provider_trees.create_many, list(providers))

    return create


class DirectSession(requests.Session):
    """A session bound to an in-process placement app."""

    def __init__(self, app, microversion=None):
        super().__init__()
        self.mount(BASE_URL, _WSGIAdapter(app))
        self.headers.update(
            {'x-auth-token': 'admin', 'x-roles': 'admin,service'}
        )
        if microversion:
            self.headers['openstack-api-version'] = (
                'placement %s' % microversion
            )

    def request(self, method, url, *args, **kwargs):
        if url.startswith('/'):
            url = BASE_URL + url
        return super().request(method, url, *args, **kwargs)


class PlacementDirect:
    """Context manager: ``with PlacementDirect(conf) as client: ...``.

    ``conf`` is a registered ConfigOpts whose ``[placement_database]
    connection`` the caller has set. ``latest_microversion=True`` sends
    ``placement latest`` on every request (or pass ``microversion='1.30'``).
    """

    def __init__(self, conf, latest_microversion=False, microversion=None):
        self.conf = conf
        self.microversion = microversion or (
            'latest' if latest_microversion else None
        )
        self._session = None

    def __enter__(self):
        app = wsgi.make_app(self.conf, auth_strategy='noauth2')
        self._session = DirectSession(app, self.microversion)
        return self._session

    def __exit__(self, *exc):
        self._session.close()
        return False
