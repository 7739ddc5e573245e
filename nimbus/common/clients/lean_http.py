"""A lean sender for the placement client: ``requests.Session.request``'s
keywords over ``http.client`` keep-alive connections, for plain HTTP.

The scheduler sends two placement requests per boot (the candidates, the
claim), and ``requests`` spent more CPU around each than the scheduler's
use of the answer: preparing the request (environment proxies and
settings merged per call), then reading the half-megabyte candidates body
through urllib3 in 10 kB chunks. Here a request is written as given and
its body read in one call; the answer is a ``requests.Response`` (status,
headers, content), so callers see no difference.

What it does not do, by design: HTTPS, proxies, redirects, cookies,
compression. :func:`session_for` gives it only for an ``http://``
endpoint no proxy of the environment applies to; anything else keeps a
``requests.Session``. Errors are
``requests``' own: a connection that fails or closes under a request is a
``requests.ConnectionError`` (the clients retry those), a socket timeout a
``requests.ConnectTimeout`` or ``requests.ReadTimeout``. An idle connection
the server has closed is noticed before it is reused and replaced, as
urllib3 does.
"""

from __future__ import annotations

import http.client
import select
import threading
import urllib.parse

import orjson
import requests
from requests import structures
from requests import utils as requests_utils

# Idle connections kept per endpoint (as urllib3's pool_maxsize): one
# decision at a time per scheduler, so one is in use most of the time.
MAX_IDLE = 10


def session_for(endpoint):
    """A :class:`LeanSession` for an ``http://`` endpoint that no proxy of
    the environment (``http_proxy``, less ``no_proxy``) applies to, else a
    ``requests.Session``."""
    if urllib.parse.urlsplit(
        endpoint
    ).scheme == 'http' and not requests_utils.get_environ_proxies(endpoint):
        return LeanSession()
    return requests.Session()


def _dropped(conn) -> bool:
    """True when an idle connection's socket is closed or has unread data
    (the server hung up, or answered what nobody asked)."""
    sock = conn.sock
    if sock is None:
        return True
    try:
        readable, _w, _x = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


class LeanSession:
    """``request(method, url, params=, json=, data=, headers=, timeout=)``
    for ``http://`` URLs, thread-safe: each request takes an idle
    connection to the URL's host (or opens one) and gives it back once the
    answer is read."""

    def __init__(self, max_idle=MAX_IDLE):
        self.max_idle = max_idle
        self._lock = threading.Lock()
        self._idle: dict[str, list] = {}

    # -- connections --------------------------------------------------------
    def _take(self, netloc, timeout):
        with self._lock:
            idle = self._idle.get(netloc)
            while idle:
                conn = idle.pop()
                if not _dropped(conn):
                    break
                conn.close()
            else:
                conn = None
        if conn is None:
            conn = http.client.HTTPConnection(netloc, timeout=timeout)
        elif conn.timeout != timeout:
            conn.timeout = timeout
            conn.sock.settimeout(timeout)
        return conn

    def _give_back(self, netloc, conn):
        with self._lock:
            idle = self._idle.setdefault(netloc, [])
            if len(idle) < self.max_idle:
                idle.append(conn)
                return
        conn.close()

    def close(self):
        with self._lock:
            conns = [c for idle in self._idle.values() for c in idle]
            self._idle = {}
        for conn in conns:
            conn.close()

    # -- requests -----------------------------------------------------------
    def request(
        self,
        method,
        url,
        params=None,
        json=None,
        data=None,
        headers=None,
        timeout=None,
    ):
        split = urllib.parse.urlsplit(url)
        if split.scheme != 'http':
            raise ValueError('LeanSession sends plain HTTP only: %s' % url)
        target = split.path or '/'
        query = split.query
        if params:
            more = urllib.parse.urlencode(params, doseq=True)
            query = '%s&%s' % (query, more) if query else more
        if query:
            target += '?' + query
        sent = dict(headers or {})
        body = data
        if json is not None:
            body = orjson.dumps(json, option=orjson.OPT_NON_STR_KEYS)
            sent['Content-Type'] = 'application/json'
        elif body is None and method in ('POST', 'PUT', 'PATCH'):
            body = b''  # Content-Length: 0, as requests sends
        conn = self._take(split.netloc, timeout)
        connected = conn.sock is not None
        try:
            conn.request(method, target, body=body, headers=sent)
            connected = True
            answer = conn.getresponse()
            content = answer.read()
        except TimeoutError as exc:
            conn.close()
            if not connected:
                raise requests.ConnectTimeout(str(exc)) from exc
            raise requests.ReadTimeout(str(exc)) from exc
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise requests.ConnectionError(
                '%s %s: %s' % (method, url, exc or type(exc).__name__)
            ) from exc
        if answer.will_close:
            conn.close()
        else:
            self._give_back(split.netloc, conn)
        response = requests.Response()
        response.status_code = answer.status
        response.reason = answer.reason
        response.headers = structures.CaseInsensitiveDict(answer.getheaders())
        response._content = content
        response.url = url
        response.encoding = requests_utils.get_encoding_from_headers(
            response.headers
        )
        return response

    def get(self, url, **kwargs):
        return self.request('GET', url, **kwargs)

    def put(self, url, **kwargs):
        return self.request('PUT', url, **kwargs)

    def post(self, url, **kwargs):
        return self.request('POST', url, **kwargs)

    def delete(self, url, **kwargs):
        return self.request('DELETE', url, **kwargs)
