"""OpenAPI 3.1 documents generated from a route table and its schemas.

Every REST API of Nimbus is a route table ``[(path, {METHOD: handler})]``
(see :mod:`nimbus.common.wsgi`) whose handlers validate with JSON schemas
through :mod:`nimbus.common.wsgi.validation`. :func:`document` turns the
table into an OpenAPI 3.1 document: every path and method of the table
(so a route nobody described is still listed, with its path parameters,
and still fuzzed), plus what each API tells about an operation in an
:class:`Operation`: the request body schema, the query parameters (a
schema, or the names it accepts), its success statuses and stateful
links. OpenAPI 3.1 schemas are JSON Schema, so the validation schemas go
in as they are (copied, never shared).

Every operation documents the error statuses any request can meet (bad
input, authentication, policy, not found, method, media type, body size,
microversion) with the API's own error body (``error_schema``), so a
client or a fuzzer can hold each response to the document.

The document describes the API at its latest microversion; the
microversion header is a documented parameter of every operation.
:func:`dumps` renders it byte-stable, for the copies checked into
``docs/openapi/``.
"""

import copy
import dataclasses
import json
import re

OPENAPI_VERSION = '3.1.0'

_PARAM = re.compile(r'{([^}]+)}')

# The statuses a request can get from the shared layer whatever the route:
# schema or query errors (400), no or bad token (401), policy (403), an
# unknown id (404), an unsupported method (405), an unacceptable Accept
# (406), a concurrent change of what a request writes (409), a body too
# large (413), a non-JSON body (415).
COMMON_ERRORS = (400, 401, 403, 404, 405, 406, 409, 413, 415)

_SUCCESS = {
    'GET': (200,),
    'HEAD': (200,),
    'POST': (200, 201, 202, 204),
    'PUT': (200, 201, 204),
    'PATCH': (200,),
    'DELETE': (202, 204),
}

_REASONS = {
    200: 'OK',
    201: 'Created',
    202: 'Accepted',
    204: 'No Content',
    400: 'Bad Request',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'Not Found',
    405: 'Method Not Allowed',
    406: 'Not Acceptable',
    409: 'Conflict',
    413: 'Payload Too Large',
    415: 'Unsupported Media Type',
    503: 'Service Unavailable',
}


@dataclasses.dataclass
class Operation:
    """What an API knows about one operation beyond its route.

    - ``body``: the JSON schema of the request body (None: no body).
    - ``query``: a JSON schema of the query string as a dict (as
      ``nimbus.api.util.query`` validates it), or a sequence of accepted
      parameter names (strings, as placement's ``check_query`` allows).
    - ``success``: the success statuses (default by method).
    - ``errors``: extra error statuses (e.g. 409, 503).
    - ``path_schemas``: ``{path parameter: schema}`` (default: a string).
    - ``links``: ``{status: {link name: (operationId, {param: runtime
      expression})}}``, OpenAPI links that a stateful fuzzer follows.
    - ``summary``: one line.
    - ``body_required``: whether the request body must be present.
    - ``bodiless``: success statuses answered without a body.
    """

    body: dict | None = None
    query: object = None
    success: tuple = ()
    errors: tuple = ()
    path_schemas: dict = dataclasses.field(default_factory=dict)
    links: dict = dataclasses.field(default_factory=dict)
    summary: str = ''
    body_required: bool = True
    bodiless: tuple = (204,)


def operation_id(method, path):
    """A stable id from the method and the path: ``get_servers_server_id``."""
    words = re.sub(r'[^A-Za-z0-9]+', '_', path).strip('_').lower()
    return '%s_%s' % (method.lower(), words or 'root')


def _schema(value):
    """A copy of a validation schema fit for OpenAPI 3.1: tuples become
    lists, ``$schema`` keys go (the document names its dialect once)."""
    if isinstance(value, dict):
        return {k: _schema(v) for k, v in value.items() if k != '$schema'}
    if isinstance(value, (list, tuple)):
        return [_schema(v) for v in value]
    return copy.deepcopy(value)


def _query_parameters(query):
    if query is None:
        return []
    if isinstance(query, dict):
        props = query.get('properties', {})
        required = set(query.get('required', ()))
        out = []
        for name in sorted(props):
            schema = _schema(props[name])
            param = {
                'name': name,
                'in': 'query',
                'required': name in required,
                'schema': schema,
            }
            if schema.get('type') == 'array':
                param.update(style='form', explode=True)
            out.append(param)
        return out
    return [
        {
            'name': name,
            'in': 'query',
            'required': False,
            'schema': {'type': 'string'},
        }
        for name in sorted(query)
    ]


def _responses(method, op, version_header):
    success = op.success or _SUCCESS.get(method, (200,))
    responses = {}
    for status in sorted(success):
        response = {'description': _REASONS.get(status, str(status))}
        if status not in op.bodiless:
            response['content'] = {'application/json': {'schema': {}}}
        links = op.links.get(status)
        if links:
            response['links'] = {
                name: {'operationId': target, 'parameters': dict(params)}
                for name, (target, params) in sorted(links.items())
            }
        if version_header:
            response['headers'] = {
                version_header: {
                    'schema': {'type': 'string'},
                    'description': 'The microversion that answered.',
                }
            }
        responses[str(status)] = response
    for status in sorted(set(COMMON_ERRORS) | set(op.errors)):
        responses[str(status)] = {
            '$ref': '#/components/responses/%s' % _error_name(status)
        }
    return responses


def _error_name(status):
    return 'Error%d' % status


def _error_response(status):
    return {
        'description': _REASONS.get(status, str(status)),
        'content': {
            'application/json': {
                'schema': {'$ref': '#/components/schemas/Error'}
            }
        },
    }


def document(
    routes,
    *,
    title,
    api_version,
    error_schema,
    operations=None,
    microversion=None,
    public_paths=(),
    description='',
):
    """The OpenAPI 3.1 document (a dict) of ``routes``.

    - ``routes``: ``[(path, {METHOD: handler})]``, the API's route table.
    - ``error_schema``: JSON schema of the API's error body.
    - ``operations``: ``{(METHOD, path): Operation}``; a route missing
      here is still documented from what the table tells.
    - ``microversion``: ``(header name, service type, min, max)``; adds
      the header as an optional parameter of every operation.
    - ``public_paths``: paths that need no token (no security entry).
    """
    operations = operations or {}
    version_header = microversion[0] if microversion else None
    paths = {}
    statuses = set(COMMON_ERRORS)
    for path, handlers in routes:
        item = paths.setdefault(path, {})
        names = _PARAM.findall(path)
        for method in handlers:
            method = method.upper()
            op = operations.get((method, path)) or Operation()
            statuses.update(op.errors)
            params = [
                {
                    'name': name,
                    'in': 'path',
                    'required': True,
                    'schema': _schema(
                        op.path_schemas.get(
                            name, {'type': 'string', 'minLength': 1}
                        )
                    ),
                }
                for name in names
            ]
            params += _query_parameters(op.query)
            if microversion:
                params.append({'$ref': '#/components/parameters/Microversion'})
            entry = {
                'operationId': operation_id(method, path),
                'responses': _responses(method, op, version_header),
            }
            if op.summary:
                entry['summary'] = op.summary
            if params:
                entry['parameters'] = params
            if op.body is not None:
                entry['requestBody'] = {
                    'required': op.body_required,
                    'content': {
                        'application/json': {'schema': _schema(op.body)}
                    },
                }
            if path in public_paths and method == 'GET':
                entry['security'] = []
            item[method.lower()] = entry
    unknown = set(operations) - {
        (m.upper(), p) for p, hs in routes for m in hs
    }
    if unknown:
        raise ValueError(
            'operations not in the route table: %s' % sorted(unknown)
        )
    components = {
        'schemas': {'Error': _schema(error_schema)},
        'responses': {
            _error_name(status): _error_response(status)
            for status in sorted(statuses)
        },
        'securitySchemes': {
            'token': {'type': 'apiKey', 'in': 'header', 'name': 'X-Auth-Token'}
        },
    }
    if microversion:
        header, service, low, high = microversion
        components['parameters'] = {
            'Microversion': {
                'name': header,
                'in': 'header',
                'required': False,
                'description': 'The microversion, "%s X.Y" between %s and %s, '
                'or "%s latest".' % (service, low, high, service),
                'schema': {'type': 'string'},
            }
        }
    info = {'title': title, 'version': api_version}
    if description:
        info['description'] = description
    return {
        'openapi': OPENAPI_VERSION,
        'info': info,
        'paths': paths,
        'components': components,
        'security': [{'token': []}],
    }


def dumps(doc):
    """``doc`` as stable, indented JSON text (sorted keys, final newline)."""
    return json.dumps(doc, indent=2, sort_keys=True) + '\n'
