"""Parsing of the provider filters of GET /resource_providers.

``member_of``, ``required`` and ``resources`` follow Placement's syntax:
``member_of=in:A,B`` (any of), repeated ``member_of`` (all of, 1.24),
``!`` forbidden forms (1.32); ``required=T1,!T2`` (forbidden from 1.22),
``in:T1,T2`` any-of and repeated ``required`` (1.39);
``resources=VCPU:2,MEMORY_MB:512``.
"""

import re

from nimbus.placement import exception
from nimbus.placement.handlers import util

_UUID = re.compile(util.UUID_RE)


def _bad(detail, code=exception.QUERY_BAD_VALUE):
    return exception.BadRequest(detail, error_code=code)


def parse_member_of(values, version):
    """``(any_of_sets, forbidden)``: each set must intersect, none of
    ``forbidden`` may."""
    if version < (1, 24):
        values = values[-1:]
    required, forbidden = [], set()
    for value in values:
        negate = value.startswith('!')
        if negate:
            if version < (1, 32):
                raise _bad('Invalid query string parameters: Expected '
                           'member_of parameter to contain valid UUID(s). '
                           'Got: %s' % value)
            value = value[1:]
        any_of = value.startswith('in:')
        if any_of:
            value = value[3:]
        uuids = [u.strip() for u in value.split(',')]
        if not uuids or not all(_UUID.match(u) for u in uuids):
            raise _bad('Invalid query string parameters: Expected member_of '
                       'parameter to contain valid UUID(s). Got: %s' % value)
        if negate:
            if any_of is False and len(uuids) > 1:
                raise _bad('Invalid query string parameters: forbidden '
                           'aggregates must use the !in: prefix for lists. '
                           'Got: %s' % value)
            forbidden.update(uuids)
        else:
            if len(uuids) > 1 and not any_of:
                raise _bad('Invalid query string parameters: Expected '
                           'member_of parameter to contain valid UUID(s) '
                           'with the in: prefix for lists. Got: %s' % value)
            required.append(frozenset(uuids))
    return required, frozenset(forbidden)


def parse_required(values, version, known):
    """``(all_of, any_of_sets, forbidden)`` trait constraints."""
    if version < (1, 39):
        values = values[-1:]
    all_of, any_sets, forbidden = set(), [], set()
    for value in values:
        if value.startswith('in:'):
            if version < (1, 39):
                raise _bad('Invalid query string parameters: in: prefix '
                           'needs microversion 1.39. Got: %s' % value)
            names = [n.strip() for n in value[3:].split(',')]
            _check_traits(names, known)
            any_sets.append(frozenset(names))
            continue
        for name in (n.strip() for n in value.split(',')):
            if not name:
                raise _bad('Invalid query string parameters: Expected '
                           'required parameter value of the form: '
                           'HW_CPU_X86_VMX,!CUSTOM_MAGIC. Got: %s' % value)
            if name.startswith('!'):
                if version < (1, 22):
                    raise _bad('Invalid query string parameters: forbidden '
                               'traits need microversion 1.22. Got: %s'
                               % value)
                forbidden.add(name[1:])
            else:
                all_of.add(name)
    _check_traits(all_of | forbidden, known)
    conflict = all_of & forbidden
    if conflict:
        raise _bad('Conflicting required and forbidden traits found in '
                   'the following traits keys: %s' % ', '.join(
                       sorted(conflict)))
    return frozenset(all_of), any_sets, frozenset(forbidden)


def _check_traits(names, known):
    missing = sorted(n for n in names if n not in known)
    if missing:
        raise exception.BadRequest('No such trait(s): %s.' %
                                   ', '.join(missing))


def parse_resources(value, known):
    """``{rc: amount}`` from ``VCPU:2,MEMORY_MB:512``."""
    out = {}
    for item in value.split(','):
        rc, sep, amount = item.strip().partition(':')
        if not sep or not amount.isdigit() or not rc:
            raise _bad('Badly formed resources parameter. Expected resources '
                       'query string parameter in form: '
                       '?resources=VCPU:2,MEMORY_MB:1024. Got: %s.' % value)
        if rc in out:
            raise _bad('Badly formed resources parameter. Resource class '
                       '%s appears more than once.' % rc)
        if rc not in known:
            raise exception.BadRequest(
                'Invalid resource class in resources parameter: %s' % rc)
        out[rc] = int(amount)
    return out


def filter_providers(snapshot, *, name=None, uuid=None, member_of=None,
                     resources=None, in_tree=None, required=None):
    """Providers of ``snapshot`` matching every filter, in id order."""
    out = []
    tree_root = None
    if in_tree is not None:
        p = snapshot.providers.get(in_tree)
        if p is None:
            return []
        tree_root = p.root_uuid
    for p in snapshot.providers.values():
        if name is not None and p.name != name:
            continue
        if uuid is not None and p.uuid != uuid:
            continue
        if tree_root is not None and p.root_uuid != tree_root:
            continue
        if member_of is not None:
            any_sets, forbidden = member_of
            if forbidden & p.aggregates:
                continue
            if not all(s & p.aggregates for s in any_sets):
                continue
        if required is not None:
            all_of, any_sets, forbidden = required
            if not all_of <= p.traits or forbidden & p.traits:
                continue
            if not all(s & p.traits for s in any_sets):
                continue
        if resources and not _fits(snapshot.fit[p.uuid], resources):
            continue
        out.append(p)
    return out


def _fits(fit, resources):
    for rc, amount in resources.items():
        entry = fit.get(rc)
        if entry is None:
            return False
        free, min_unit, max_unit, step, _cap, _used = entry
        if amount > free or amount > max_unit or amount < min_unit:
            return False
        if step and amount % step:
            return False
    return True
