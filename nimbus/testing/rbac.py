"""RBAC matrices: who may call every route of a REST API.

A matrix maps each ``(method, path template)`` of an API's route table to
a :class:`Case`: how to make a request that would succeed for an
administrator (a fresh resource owned by project ``p1`` for each request,
a valid body) and which of the personas below may make it. :func:`missing`
lists the routes of a table without a case (a new route must get one) and
the cases without a route; :func:`check` runs one case for every persona
and returns the mismatches.

Personas (:data:`PERSONAS`):

- ``admin``: roles admin, member, reader, in project ``admin-project``;
- ``member``: member and reader of ``p1``, the project owning the
  resources;
- ``reader``: reader of ``p1``;
- ``other``: member and reader of ``p2``, another project;
- ``anonymous``: no token at all.

What each persona gets follows from the case's :class:`Access` and the
policy mode: ``legacy`` (``enforce_new_defaults = False``,
``enforce_scope = False``) lets any token of the owning project do what
its member does; ``new`` (both True, Nova's and oslo.policy's defaults)
refuses a reader every write.
"""

import dataclasses
import enum
import re

PERSONAS = ('admin', 'member', 'reader', 'other', 'anonymous')
MODES = ('legacy', 'new')

# (user, project, roles); Keystone's implied roles are spelled out.
IDENTITIES = {
    'admin': ('admin', 'admin-project', ('admin', 'member', 'reader')),
    'member': ('alice', 'p1', ('member', 'reader')),
    'reader': ('carol', 'p1', ('reader',)),
    'other': ('bob', 'p2', ('member', 'reader')),
}
OWNER = 'p1'


class Access(enum.Enum):
    PUBLIC = 'no token needed'
    ANY = 'any token'
    ADMIN = 'administrators only'
    SERVICE = 'the service role or administrators'
    PROJECT_READ = 'a reader of the owning project, or an admin'
    PROJECT_WRITE = 'a member of the owning project, or an admin'
    USER_OWNED = 'the owning user, or an admin (others: 403)'


def policy_overrides(mode):
    """``[oslo_policy]`` options of a policy mode."""
    new = mode == 'new'
    return {'enforce_new_defaults': new, 'enforce_scope': new}


def policy_config_text(mode):
    """The ``[oslo_policy]`` section of a policy mode, for a config file
    (the options exist once an enforcer registers them)."""
    return '[oslo_policy]\n' + ''.join(
        '%s = %s\n' % item for item in policy_overrides(mode).items()
    )


def noauth2_headers(persona):
    """The noauth2 headers of ``persona`` (none for ``anonymous``)."""
    if persona == 'anonymous':
        return {}
    user, project, roles = IDENTITIES[persona]
    return {
        'X-Auth-Token': '%s:%s' % (user, project),
        'X-Roles': ','.join(roles),
    }


@dataclasses.dataclass
class Case:
    """One route and method.

    - ``access``: who may call it (:class:`Access`).
    - ``ok``: the status of a successful call.
    - ``setup(world) -> dict``: called before every request; its dict fills
      the path template's fields, and may hold ``body`` (JSON),
      ``query`` (a string) and ``headers``; static ``body``/``query``/
      ``version`` apply when ``setup`` gives none.
    - ``other``: what a member of another project gets on a project's
      resource (404: it does not exist for them, as Nova answers; 403 for
      routes that name a project, such as quotas and usage).
    - ``visible(response, params) -> bool``: for project-wide lists, does
      the response show the owning project's resource (a member sees it,
      another project's member must not).
    - ``hidden``: an admin-only route on a project's resource (a
      server's diagnostics): another project's member gets 404, as in
      Nova (the resource is looked up before the policy is checked).
    - ``legacy_reader_writes``: whether the legacy defaults let a reader
      of the owning project write (they do where the legacy rule is
      "the owning project"; an API without deprecated rules refuses).
    """

    access: Access
    ok: int = 200
    setup: object = None
    body: object = None
    query: str = None
    version: str = None
    other: int = 404
    visible: object = None
    legacy_reader_writes: bool = True
    hidden: bool = False

    def expected(self, persona, mode):
        if persona == 'anonymous':
            return self.ok if self.access is Access.PUBLIC else 401
        if self.access in (Access.PUBLIC, Access.ANY):
            return self.ok
        if persona == 'admin':
            return self.ok
        if self.access in (Access.ADMIN, Access.SERVICE):
            return 404 if self.hidden and persona == 'other' else 403
        if self.access is Access.USER_OWNED:
            # The owner is the member persona; anyone else naming that
            # user (``user_id``) is refused by the policy.
            return self.ok if persona == 'member' else 403
        if persona == 'other':
            return self.other
        if persona == 'reader' and self.access is Access.PROJECT_WRITE:
            if mode == 'new' or not self.legacy_reader_writes:
                return 403
        return self.ok


def route_methods(routes):
    """``{(method, path), ...}`` of a route table ``[(path, {method:
    handler})]``."""
    return {(method, path) for path, methods in routes for method in methods}


def missing(routes, matrix):
    """``(routes without a case, cases without a route)``, sorted."""
    table = route_methods(routes)
    return sorted(table - set(matrix)), sorted(set(matrix) - table)


def fill(path, params):
    """``path`` with its ``{field}`` placeholders taken from ``params``."""
    return re.sub(r'\{(\w+)\}', lambda m: str(params[m.group(1)]), path)


def check(
    case, method, path, send, make_headers, mode, world, personas=PERSONAS
):
    """Run ``case`` once per persona; the mismatches as strings.

    ``send(method, url, headers, body, version) -> (status, json or
    None)`` makes a request (``url`` may hold a query string; ``body`` is
    JSON, or bytes sent as they are); ``make_headers(persona)`` gives a
    persona's identity headers. A fresh ``case.setup(world)`` precedes
    each request."""
    problems = []
    for persona in personas:
        params = dict(case.setup(world) if case.setup else {})
        body = params.pop('body', case.body)
        query = params.pop('query', case.query)
        headers = dict(make_headers(persona))
        headers.update(params.pop('headers', {}))
        url = fill(path, params) + ('?' + query if query else '')
        status, payload = send(method, url, headers, body, case.version)
        want = case.expected(persona, mode)
        if status != want:
            problems.append(
                '%s %s as %s (%s): %s, expected %s: %s'
                % (
                    method,
                    url,
                    persona,
                    mode,
                    status,
                    want,
                    str(payload)[:200],
                )
            )
            continue
        if case.visible and persona in ('member', 'other') and want < 300:
            seen = case.visible(payload, params)
            if seen != (persona == 'member'):
                problems.append(
                    '%s %s as %s (%s): %s project %s resource'
                    % (
                        method,
                        url,
                        persona,
                        mode,
                        'sees' if seen else 'does not see',
                        OWNER,
                    )
                )
    return problems


def table(matrix, mode):
    """The matrix as Markdown: one row per route, one column per persona."""
    lines = [
        '| route | ' + ' | '.join(PERSONAS) + ' |',
        '|' + '---|' * (len(PERSONAS) + 1),
    ]
    for (method, path), case in sorted(matrix.items(), key=lambda i: i[0][1]):
        lines.append(
            '| %s %s | %s |'
            % (
                method,
                path,
                ' | '.join(str(case.expected(p, mode)) for p in PERSONAS),
            )
        )
    return '\n'.join(lines)
