"""Send the same request sequence to OpenStack Placement 16.0.0 and to
nimbus-placement-api and say where the answers differ.

A *step* is ``(method, path, body, options)``; ``path`` and ``body`` may
name the sequence's objects by placeholder: ``{A}`` is the uuid given to
name ``A`` (the same for both servers), ``@gen:A`` (a whole JSON value) is
provider ``A``'s generation *as that server reports it just before the
step*, so a server whose generations drifted gets a 409 where the other
gets a 204. ``options`` may hold ``mv`` (default 1.39), ``headers`` (sent
as given; ``x-auth-token`` defaults to ``admin``), ``data`` (a raw body
instead of JSON) and ``gens`` (provider names whose generations to record
after the step).

:func:`outcome` reduces a response to what must be equal: the status, the
JSON body with uuids replaced by their names and timestamps, request ids
and error wording removed, and the headers a client may depend on.
"""

import re

UUID_RE = re.compile(
    r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
)

# Headers compared between the servers (values normalised below).
HEADERS = (
    'content-type',
    'cache-control',
    'last-modified',
    'location',
    'allow',
    'openstack-api-version',
    'vary',
    'access-control-allow-origin',
    'access-control-allow-methods',
    'access-control-allow-headers',
    'access-control-expose-headers',
    'access-control-allow-credentials',
    'access-control-max-age',
)


def _fill(value, names, gen):
    if isinstance(value, str):
        if value.startswith('@gen:'):
            return gen(value[5:])
        return value.format(**names)
    if isinstance(value, dict):
        return {
            _fill(k, names, gen): _fill(v, names, gen)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_fill(v, names, gen) for v in value]
    return value


def _unname(value, by_uuid):
    if isinstance(value, str):
        return UUID_RE.sub(lambda m: by_uuid.get(m.group(0), '<uuid>'), value)
    if isinstance(value, dict):
        return {
            _unname(k, by_uuid): _unname(v, by_uuid) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_unname(v, by_uuid) for v in value]
    return value


def _strip(body):
    """Drop what may differ: error wording, request ids, timestamps."""
    if isinstance(body, dict):
        out = {}
        for k, v in body.items():
            if k in (
                'detail',
                'title',
                'request_id',
                'created_at',
                'updated_at',
            ):
                continue
            if k in ('traits', 'allocation_requests') and isinstance(v, list):
                # traits in database order; candidates in the order of
                # the generation strategy (see docs/placement.md)
                v = sorted(v, key=repr)
            out[k] = _strip(v)
        return out
    if isinstance(body, list):
        return [_strip(v) for v in body]
    return body


def outcome(resp, by_uuid, headers=HEADERS):
    """``(status, body, headers)`` reduced to what must be equal."""
    ctype = resp.headers.get('content-type', '')
    body = None
    if resp.content:
        if 'json' in ctype:
            body = _strip(_unname(resp.json(), by_uuid))
        else:
            body = '<%d bytes of %s>' % (
                len(resp.content),
                ctype.split(';')[0],
            )
    hdrs = {}
    for name in headers:
        value = resp.headers.get(name)
        if value is None:
            continue
        if name == 'last-modified':
            value = '<date>'
        elif name == 'location':
            value = _unname(re.sub(r'^https?://[^/]+', '', value), by_uuid)
        elif name == 'content-type':
            value = value.split(';')[0].strip()
        elif name in (
            'allow',
            'vary',
            'access-control-allow-methods',
            'access-control-allow-headers',
            'access-control-expose-headers',
        ):
            value = ','.join(
                sorted(v.strip().lower() for v in value.split(','))
            )
        hdrs[name] = value
    return resp.status_code, body, hdrs


def generation(client, uuid, headers=None):
    resp = client.session.request(
        'GET',
        client.url + '/resource_providers/' + uuid,
        headers=dict(
            headers or {}, **{'openstack-api-version': 'placement 1.39'}
        ),
        timeout=60,
    )
    return resp.json()['generation'] if resp.status_code == 200 else None


def run(client, names, steps, compare_body=True, headers=HEADERS):
    """The outcomes of ``steps`` on one server, one entry per step."""
    by_uuid = {v: k for k, v in names.items()}
    out = []
    for method, path, body, opts in steps:

        def gen(name):
            return generation(client, names[name])

        hdrs = {
            'x-auth-token': 'admin',
            'accept': 'application/json',
            'openstack-api-version': 'placement %s' % opts.get('mv', '1.39'),
        }
        hdrs.update(opts.get('headers', {}))
        hdrs = {k: v for k, v in hdrs.items() if v is not None}
        kw = {}
        if 'data' in opts:
            kw['data'] = opts['data']
        elif body is not None:
            kw['json'] = _fill(body, names, gen)
        resp = client.session.request(
            method,
            client.url + _fill(path, names, gen),
            headers=hdrs,
            timeout=120,
            **kw,
        )
        status, got, got_headers = outcome(resp, by_uuid, headers)
        entry = {
            'step': '%s %s %s' % (opts.get('mv', '1.39'), method, path),
            'status': status,
            'headers': got_headers,
        }
        if compare_body:
            entry['body'] = got
        if opts.get('gens'):
            entry['gens'] = {n: gen(n) for n in opts['gens']}
        out.append(entry)
    return out


def differences(peer, nimbus, known=()):
    """Lines describing each step where the two runs differ; ``known`` is
    a predicate ``(peer_entry, nimbus_entry) -> reason or None`` for
    documented Placement 16 bugs (the line is then not reported)."""
    lines = []
    for p, n in zip(peer, nimbus, strict=False):
        if p == n:
            continue
        why = next((k(p, n) for k in known if k(p, n)), None)
        if why:
            continue
        keys = [k for k in p if p[k] != n.get(k)]
        lines.append(
            '%s: %s'
            % (
                p['step'],
                '; '.join(
                    '%s peer %r nimbus %r' % (k, p[k], n.get(k)) for k in keys
                ),
            )
        )
    return lines
