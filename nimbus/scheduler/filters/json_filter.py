"""JsonFilter: a small query language over HostState attributes."""

from __future__ import annotations

import json
import operator

from nimbus.scheduler.filters.base import BaseHostFilter, cached
from nimbus.scheduler.filters.capabilities import resolve


class InvalidQuery(ValueError):
    pass


def _cmp(fn):
    def op(args):
        if len(args) < 2:
            return False
        return all(fn(args[0], b) for b in args[1:])

    return op


def _eq(args):
    return len(args) >= 2 and all(a == args[0] for a in args[1:])


def _in(args):
    return len(args) >= 2 and args[0] in args[1:]


def _not(args):
    # applies to each argument; true only when every argument is false
    return all(not a for a in args)


OPS = {
    '=': _eq,
    '<': _cmp(operator.lt),
    '>': _cmp(operator.gt),
    '<=': _cmp(operator.le),
    '>=': _cmp(operator.ge),
    'in': _in,
    'not': _not,
    'or': lambda args: any(args),
    'and': lambda args: all(args),
}


def evaluate(expr, host_state):
    """Evaluate a parsed query against one host. ``"$free_ram_mb"`` (or
    ``"$cpu_info.arch"``) reads a host attribute; lists whose head is an operator are
    expressions; anything else is a literal."""
    if isinstance(expr, str):
        if expr.startswith('$'):
            return resolve(host_state, expr[1:].split('.'))
        return expr
    if (
        isinstance(expr, list)
        and expr
        and isinstance(expr[0], str)
        and expr[0] in OPS
    ):
        args = [evaluate(a, host_state) for a in expr[1:]]
        if expr[0] not in ('and', 'or', 'not', '=', 'in') and any(
            a is None for a in args
        ):
            return False
        try:
            return OPS[expr[0]](args)
        except TypeError:
            return False
    return expr


def parse(query):
    if isinstance(query, (list, dict)):
        return query
    try:
        parsed = json.loads(query)
    except (TypeError, ValueError) as exc:
        raise InvalidQuery(f'query hint is not JSON: {exc}') from exc
    if not isinstance(parsed, list) or not parsed or parsed[0] not in OPS:
        raise InvalidQuery(
            'query must be a list whose first element is an operator'
        )
    return parsed


class JsonFilter(BaseHostFilter):
    """Passes hosts for which the ``query`` scheduler hint evaluates true.

    Grammar: ``[op, arg, ...]`` with ``=``, ``<``, ``>``, ``in``, ``<=``, ``>=`` on values
    and ``not``, ``or``, ``and`` on sub-expressions; ``"$attr"`` is a HostState attribute
    (dotted for dict fields, e.g. ``$cpu_info.arch``). A query that is not valid JSON
    rejects every host (the explanation says why). Options: none.
    Example: ``--hint query='["and", [">=", "$free_ram_mb", 1024],
    [">=", "$free_disk_mb", 204800]]'``.

    Runs for every instance of a multi-create: a query may read what the earlier
    instances changed (``$free_ram_mb``, ``$num_instances``) on the host that took them.
    """

    def _query(self, spec):
        def compute():
            raw = spec.get_hint('query')
            if not raw:
                return None
            try:
                return parse(raw)
            except InvalidQuery as exc:
                return exc

        return cached(spec, 'json_query', compute)

    def is_enabled_for(self, spec):
        return self._query(spec) is not None

    def host_passes(self, host_state, spec):
        q = self._query(spec)
        if isinstance(q, InvalidQuery):
            return False
        return bool(evaluate(q, host_state))

    def reject_reason(self, host_state, spec):
        q = self._query(spec)
        if isinstance(q, InvalidQuery):
            return str(q)
        return f'query {json.dumps(q)} is false for this host'
