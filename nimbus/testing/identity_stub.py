"""A tiny stand-in for Keystone's identity API v3, enough for
keystonemiddleware's ``auth_token`` to run for real against it.

It answers version discovery (``GET /`` and ``GET /v3``), the service
user's password authentication (``POST /v3/auth/tokens``, a token with a
catalog naming this service as the identity endpoint) and token
validation (``GET``/``HEAD /v3/auth/tokens`` with ``X-Subject-Token``,
asked with a service token): 200 with the token body for a token added
by :meth:`IdentityStub.add_token`, 404 for any other. Nothing else.

``IdentityStub().start()`` serves it on a free port of 127.0.0.1 in a
thread; :meth:`IdentityStub.authtoken_config` is the
``[keystone_authtoken]`` section an API needs to use it;
``validations`` counts the tokens validated (the middleware caches
them). :meth:`IdentityStub.stop` stops it.
"""

import datetime
import json
import threading
import uuid
from wsgiref import simple_server

SERVICE_USER = 'nimbus'
SERVICE_PASSWORD = 'stub-service-password'
SERVICE_PROJECT = 'service'
_DOMAIN = {'id': 'default', 'name': 'Default'}


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


def _stamp(when):
    return when.strftime('%Y-%m-%dT%H:%M:%S.000000Z')


class _Quiet(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


class _Server(simple_server.WSGIServer):
    daemon_threads = True

    def process_request(self, request, client_address):
        # one thread per connection (socketserver.ThreadingMixIn's way)
        thread = threading.Thread(
            target=self._handle, args=(request, client_address), daemon=True
        )
        thread.start()

    def _handle(self, request, client_address):
        try:
            self.finish_request(request, client_address)
        except Exception:  # noqa: BLE001 - as socketserver's own handler
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)


class IdentityStub:
    def __init__(self):
        self.tokens = {}
        self.service_tokens = set()
        self.validations = 0
        self._server = None
        self._thread = None
        self._lock = threading.Lock()

    # -- tokens ----------------------------------------------------------
    def add_token(self, token, user_id, project_id, roles, system=False):
        """Make ``token`` valid for ``user_id`` in ``project_id`` (None with
        ``system``: a system-scoped token) with role names ``roles``."""
        self.tokens[token] = (user_id, project_id, list(roles), system)
        return token

    def _body(self, user_id, project_id, roles, system=False, catalog=False):
        issued = _now()
        body = {
            'methods': ['password'],
            'user': {'id': user_id, 'name': user_id, 'domain': _DOMAIN},
            'roles': [{'id': 'role-' + name, 'name': name} for name in roles],
            'issued_at': _stamp(issued),
            'expires_at': _stamp(issued + datetime.timedelta(hours=1)),
            'audit_ids': [uuid.uuid4().hex[:22]],
        }
        if system:
            body['system'] = {'all': True}
        elif project_id:
            body['project'] = {
                'id': project_id,
                'name': project_id,
                'domain': _DOMAIN,
            }
        if catalog:
            body['catalog'] = [
                {
                    'id': 'identity-service',
                    'type': 'identity',
                    'name': 'keystone',
                    'endpoints': [
                        {
                            'id': 'identity-%s' % interface,
                            'interface': interface,
                            'region': 'RegionOne',
                            'region_id': 'RegionOne',
                            'url': self.url + '/v3',
                        }
                        for interface in ('public', 'internal', 'admin')
                    ],
                }
            ]
        return {'token': body}

    # -- serving ---------------------------------------------------------
    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self._server.server_port

    def start(self):
        self._server = simple_server.make_server(
            '127.0.0.1',
            0,
            self.app,
            server_class=_Server,
            handler_class=_Quiet,
        )
        self._thread = threading.Thread(
            target=self._server.serve_forever, daemon=True
        )
        self._thread.start()
        return self

    def stop(self):
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=10)
            self._server = None

    def authtoken_config(self):
        """The ``[keystone_authtoken]`` options (a dict) of a service
        validating tokens here as the service user."""
        return {
            'www_authenticate_uri': self.url + '/v3',
            'auth_type': 'password',
            'auth_url': self.url + '/v3',
            'username': SERVICE_USER,
            'password': SERVICE_PASSWORD,
            'project_name': SERVICE_PROJECT,
            'user_domain_name': 'Default',
            'project_domain_name': 'Default',
            'interface': 'internal',
            'region_name': 'RegionOne',
            # validate each token once per test, not from a stale cache
            'token_cache_time': 300,
        }

    def config_text(self):
        """:meth:`authtoken_config` as an ini section."""
        lines = ['[keystone_authtoken]']
        lines += ['%s = %s' % kv for kv in self.authtoken_config().items()]
        return '\n'.join(lines) + '\n'

    # -- the WSGI app ----------------------------------------------------
    def _version(self):
        return {
            'id': 'v3.14',
            'status': 'stable',
            'updated': '2020-04-07T00:00:00Z',
            'links': [{'rel': 'self', 'href': self.url + '/v3/'}],
            'media-types': [
                {
                    'base': 'application/json',
                    'type': 'application/vnd.openstack.identity-v3+json',
                }
            ],
        }

    def app(self, environ, start_response):
        method = environ['REQUEST_METHOD']
        path = environ.get('PATH_INFO') or '/'
        if method == 'GET' and path == '/':
            return self._json(
                start_response,
                '300 Multiple Choices',
                {'versions': {'values': [self._version()]}},
            )
        if method == 'GET' and path in ('/v3', '/v3/'):
            return self._json(
                start_response, '200 OK', {'version': self._version()}
            )
        if path == '/v3/auth/tokens' and method == 'POST':
            return self._authenticate(environ, start_response)
        if path == '/v3/auth/tokens' and method in ('GET', 'HEAD'):
            return self._validate(environ, start_response, method)
        return self._error(start_response, 404, 'Not Found')

    def _authenticate(self, environ, start_response):
        try:
            length = int(environ.get('CONTENT_LENGTH') or 0)
            request = json.loads(environ['wsgi.input'].read(length))
            password = request['auth']['identity']['password']['user']
        except (ValueError, KeyError, TypeError):
            return self._error(start_response, 400, 'Bad Request')
        if (
            password.get('name') != SERVICE_USER
            or password.get('password') != SERVICE_PASSWORD
        ):
            return self._error(start_response, 401, 'Unauthorized')
        token = 'svc-' + uuid.uuid4().hex
        with self._lock:
            self.service_tokens.add(token)
        body = self._body(
            SERVICE_USER, SERVICE_PROJECT, ['service', 'admin'], catalog=True
        )
        return self._json(
            start_response, '201 Created', body, [('X-Subject-Token', token)]
        )

    def _validate(self, environ, start_response, method):
        if environ.get('HTTP_X_AUTH_TOKEN') not in self.service_tokens:
            return self._error(start_response, 401, 'Unauthorized')
        subject = environ.get('HTTP_X_SUBJECT_TOKEN')
        with self._lock:
            self.validations += 1
        if subject not in self.tokens:
            return self._error(start_response, 404, 'Not Found')
        body = self._body(*self.tokens[subject], catalog=True)
        if method == 'HEAD':
            start_response('200 OK', [('X-Subject-Token', subject)])
            return []
        return self._json(
            start_response, '200 OK', body, [('X-Subject-Token', subject)]
        )

    @staticmethod
    def _json(start_response, status, body, headers=()):
        data = json.dumps(body).encode()
        start_response(
            status,
            [
                ('Content-Type', 'application/json'),
                ('Content-Length', str(len(data))),
            ]
            + list(headers),
        )
        return [data]

    def _error(self, start_response, code, title):
        status = '%d %s' % (code, title)
        return self._json(
            start_response,
            status,
            {'error': {'code': code, 'title': title, 'message': title}},
        )
