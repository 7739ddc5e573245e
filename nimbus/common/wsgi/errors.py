"""HTTP errors and how each API renders them.

Placement answers ``{"errors": [{"status", "title", "detail", "code",
"request_id"}]}``; the compute API answers Nova's ``{"badRequest":
{"message", "code"}}``. Both come from one :class:`HTTPError`.
"""

import http
import json

import falcon


class HTTPError(falcon.HTTPError):
    """An error with a status, a detail and an optional machine code."""

    def __init__(self, status, detail, code=None, headers=None):
        status = int(status)
        super().__init__(
            falcon.code_to_http_status(status),
            title=http.HTTPStatus(status).phrase,
            description=detail,
            headers=headers,
        )
        self.status_int = status
        self.error_code = code


def bad_request(detail, code=None):
    return HTTPError(400, detail, code)


def not_found(detail, code=None):
    return HTTPError(404, detail, code)


def conflict(detail, code=None):
    return HTTPError(409, detail, code)


def forbidden(detail='Policy does not allow this action.', code=None):
    return HTTPError(403, detail, code)


_NOVA_KEYS = {
    400: 'badRequest',
    401: 'unauthorized',
    403: 'forbidden',
    404: 'itemNotFound',
    405: 'badMethod',
    406: 'notAcceptable',
    409: 'conflictingRequest',
    413: 'overLimit',
    415: 'badMediaType',
    501: 'notImplemented',
    503: 'serviceUnavailable',
}


# Placement's error bodies carry ``code`` from this microversion on.
ERROR_CODE_VERSION = (1, 23)


def placement_body(
    status, title, detail, code, request_id, version=None, version_limits=None
):
    """Placement's error: ``code`` only when the request's microversion is
    known and at least 1.23; a refused microversion header adds the
    supported ``min_version`` and ``max_version``."""
    error = {'status': status, 'title': title, 'detail': detail or title}
    if version is not None and version >= ERROR_CODE_VERSION:
        error['code'] = code or 'placement.undefined_code'
    if request_id:
        error['request_id'] = request_id
    if version_limits is not None:
        error['min_version'], error['max_version'] = (
            str(v) for v in version_limits
        )
    return {'errors': [error]}


def compute_body(
    status, title, detail, code, request_id, version=None, version_limits=None
):
    key = _NOVA_KEYS.get(status, 'computeFault')
    return {key: {'message': detail or title, 'code': status}}


def accelerator_body(
    status, title, detail, code, request_id, version=None, version_limits=None
):
    """Cyborg's (WSME's) error: ``{"error_message": "<JSON text of
    {faultcode, faultstring, debuginfo}>"}``, which python-cyborgclient
    and openstacksdk read."""
    fault = {
        'faultcode': 'Client' if status < 500 else 'Server',
        'faultstring': detail or title,
        'debuginfo': None,
    }
    if version_limits is not None:
        fault['min_version'], fault['max_version'] = (
            str(v) for v in version_limits
        )
    return {'error_message': json.dumps(fault)}


STYLES = {
    'placement': placement_body,
    'compute': compute_body,
    'accelerator': accelerator_body,
}
