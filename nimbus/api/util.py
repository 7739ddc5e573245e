"""Helpers shared by the handlers: dependencies, links, queries, paging."""

import collections
import dataclasses
import datetime
import ipaddress
import secrets
import string
import threading

from oslo_log import log as logging
from oslo_utils import timeutils

from nimbus.common import wsgi
from nimbus.common.wsgi import errors
from nimbus.common.wsgi import validation

LOG = logging.getLogger(__name__)

ENV_KEY = 'nimbus.api.deps'


@dataclasses.dataclass
class Deps:
    """What handlers reach: injected by :func:`nimbus.api.app.make_app`."""

    conf: object
    api_db: object
    cells: object
    conductor_api: object
    scheduler_api: object
    compute_api_factory: object
    policy: object
    placement: object = None
    accelerator: object = None
    dashboard: object = None
    # Queries on cell databases within [api] cell_timeout
    # (:class:`nimbus.common.cells.CellQueries`).
    cell_queries: object = None
    # One lock per project for the write-and-recheck step of a create.
    quota_locks: object = dataclasses.field(
        default_factory=lambda: ProjectLocks()
    )

    def compute_api(self, cell):
        return self.compute_api_factory(cell)


class ProjectLocks:
    """A lock per project id, made on first use.

    ``POST /servers`` holds the project's lock while it writes its records
    and rechecks the quotas, so the creates one API process serves for a
    project are decided one after the other: none is refused because
    another's records, later removed, were counted with its own. Across
    processes the recheck alone keeps the limit (a refusal may then be one
    more than needed, as in Nova)."""

    def __init__(self):
        self._guard = threading.Lock()
        self._locks = collections.defaultdict(threading.Lock)

    def __call__(self, project_id):
        with self._guard:
            return self._locks[project_id]


def deps(req):
    return req.env[ENV_KEY]


def ctx(req):
    return req.context['ctx']


def version(req):
    return req.context['version']


_POLICY_MEMO = 'nimbus.api.policy_memo'


def _memo_key(req, rule, target):
    """What a policy verdict depends on within one request: the rule, the
    request's context and the target; None when the target cannot be a
    key (then nothing is remembered)."""
    try:
        items = None if target is None else tuple(sorted(target.items()))
        key = (rule, id(ctx(req)), items)
        hash(key)
    except TypeError:
        return None
    return key


def _verdict(req, rule, target):
    """The remembered verdict of ``rule`` on ``target`` in this request,
    and the memo and key to remember a new one with."""
    memo = req.context.get(_POLICY_MEMO)
    if memo is None:
        memo = req.context[_POLICY_MEMO] = {}
    key = _memo_key(req, rule, target)
    return (None if key is None else memo.get(key)), memo, key


def authorize(req, rule, target=None):
    """403 unless the request's context may do ``rule`` on ``target``.
    A verdict is remembered for the rest of the request (oslo.policy
    reloads and walks its rules on every check: a list of N servers would
    check the same rule on the same project N times)."""
    allowed, memo, key = _verdict(req, rule, target)
    if allowed:
        return
    deps(req).policy.authorize(ctx(req), rule, target)
    if key is not None:
        memo[key] = True


def can(req, rule, target=None):
    """Whether the request's context may do ``rule`` on ``target``
    (remembered for the rest of the request, as :func:`authorize`)."""
    allowed, memo, key = _verdict(req, rule, target)
    if allowed is None:
        allowed = deps(req).policy.check(ctx(req), rule, target)
        if key is not None:
            memo[key] = allowed
    return allowed


def base_url(req):
    prefix = deps(req).conf.api.compute_link_prefix
    if prefix:
        return prefix.rstrip('/')
    return req.prefix.rstrip('/')


def links(req, collection, ident, versioned=True):
    base = base_url(req)
    path = '%s/%s' % (collection, ident)
    return [
        {'rel': 'self', 'href': '%s/v2.1/%s' % (base, path)},
        {'rel': 'bookmark', 'href': '%s/%s' % (base, path)},
    ]


def isotime(value):
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return value.replace(microsecond=0).strftime('%Y-%m-%dT%H:%M:%SZ')


def query_time(params, name):
    """The query parameter ``name`` as a naive UTC time, or None when it is
    absent; a value that is not an ISO 8601 time is a 400 naming it."""
    value = params.get(name)
    if value is None:
        return None
    try:
        moment = timeutils.parse_isotime(value)
    except ValueError as exc:
        raise bad_request(
            'Invalid input for query parameters %s. Value: %s. It is not '
            'an ISO 8601 time (for example 2026-01-31T12:00:00Z).'
            % (name, value)
        ) from exc
    return timeutils.normalize_time(moment)


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def query(req, schema):
    """The query string as a dict, validated against ``schema``.

    A key given once is a string, a repeated key a list of strings. Unknown
    keys are dropped unless the schema lists them (Nova ignores them too).
    """
    params = {}
    for key, value in req.params.items():
        params[key] = value
    props = schema.get('properties', {})
    if not schema.get('additionalProperties', False):
        params = {k: v for k, v in params.items() if k in props}
    for key, value in list(params.items()):
        if (
            isinstance(value, list)
            and props.get(key, {}).get('type') != 'array'
        ):
            params[key] = value[-1]
    error = validation.first_error(schema, params)
    if error is not None:
        field = (
            error.absolute_path[0] if error.absolute_path else error.message
        )
        raise errors.HTTPError(
            400,
            'Invalid input for query parameters '
            '%s. Value: %s. %s'
            % (field, params.get(field, ''), error.message),
        )
    return params


def limit_of(req, params):
    max_limit = deps(req).conf.api.max_limit
    limit = params.get('limit')
    if limit is None:
        return max_limit
    return min(int(limit), max_limit)


def page(items, key, params, limit):
    """Items after ``marker`` (matched by ``key``), at most ``limit``.

    Returns ``(items, more)``. A marker that matches nothing is a 400.
    """
    marker = params.get('marker')
    if marker is not None:
        for index, item in enumerate(items):
            if str(key(item)) == marker:
                items = items[index + 1 :]
                break
        else:
            raise errors.HTTPError(400, 'marker [%s] not found' % marker)
    return items[:limit], len(items) > limit


def next_link(req, collection, last_id, params):
    query_items = [(k, v) for k, v in params.items() if k != 'marker']
    query_items.append(('marker', last_id))
    qs = '&'.join(
        '%s=%s' % (k, v) for k, v in query_items if not isinstance(v, list)
    )
    return [
        {
            'rel': 'next',
            'href': '%s/v2.1/%s?%s' % (base_url(req), collection, qs),
        }
    ]


def paged_body(req, key, views, collection, detail, more, last, params):
    """A list response: ``{key: views}``, and when there is ``more``, the
    ``<key>_links`` to the next page of ``collection`` (its ``/detail``
    form when ``detail``) after the marker ``last()``."""
    body = {key: views}
    if more and views:
        body[key + '_links'] = next_link(
            req,
            collection + '/detail' if detail else collection,
            last(),
            params,
        )
    return body


def not_found(what, ident):
    return errors.HTTPError(404, '%s %s could not be found.' % (what, ident))


def bad_request(message):
    return errors.HTTPError(400, message)


def conflict(message):
    return errors.HTTPError(409, message)


def boolish(value, field):
    text = str(value).strip().lower()
    if text in ('1', 't', 'true', 'on', 'y', 'yes'):
        return True
    if text in ('0', 'f', 'false', 'off', 'n', 'no'):
        return False
    raise bad_request(
        'Invalid value %r for %s: expected a boolean.' % (value, field)
    )


def json_body_any(req, schema, content_types):
    """Like :func:`nimbus.common.wsgi.json_body` for other JSON media types
    (Glance's json-patch type)."""
    # Deliberately like wsgi.json_body: that one accepts only
    # application/json and tags its errors with a placement error code.
    content_type = (req.content_type or '').split(';')[0].strip().lower()
    if content_type not in content_types:
        raise errors.HTTPError(
            415,
            'The media type %s is not supported, use '
            '%s' % (content_type or 'None', ' or '.join(content_types)),
        )
    data = wsgi.parse_json(req, wsgi.read_body(req))
    validate_data(data, schema)
    return data


def validate_data(data, schema):
    """400 naming the field when ``data`` does not match ``schema``."""
    wsgi.validate(data, schema)


def access_ip(value, field):
    """An ``accessIPv4``/``accessIPv6`` in Nova's stored form: the
    address as :mod:`ipaddress` writes it (IPv6 compressed, an embedded
    IPv4 tail in hex: ``::babe:dc0c:1602``); empty stays empty. The
    schema's format check has already refused what is not an address;
    a 400 naming the field covers what slips past it."""
    if not value:
        return ''
    try:
        return str(ipaddress.ip_address(value))
    except ValueError as exc:
        raise bad_request(
            'Invalid input for field/attribute %s. Value: %s. '
            'It is not an IP address.' % (field, value)
        ) from exc


def generate_password(length=12):
    """An administrator password for a server (create, rebuild, rescue)
    when the request gives none."""
    alphabet = string.ascii_letters + string.digits
    return ''.join(secrets.choice(alphabet) for _ in range(length))
