"""The provider filters of GET /resource_providers.

The query syntax is the engine's (:mod:`nimbus.placement.candidates`):
``member_of=in:A,B`` (any of), repeated ``member_of`` (all of, 1.24), ``!``
forbidden forms (1.32); ``required=T1,!T2`` (forbidden from 1.22), ``in:T1,T2``
any-of and repeated ``required`` (1.39); ``resources=VCPU:2,MEMORY_MB:512``.
:func:`parse` turns the query into the keyword arguments of
:func:`filter_providers`; a bad value is a 400 with the engine's message and
code. As in OpenStack Placement, a repeated ``member_of`` is refused before
1.24, a repeated ``required`` counts with its last value before 1.39, and
``name``, ``uuid``, ``in_tree`` and ``resources`` count with their last.
"""

import re

from nimbus.placement import candidates
from nimbus.placement import exception
from nimbus.placement.handlers import util
from nimbus.placement.schemas import common as schema_common

_UUID = re.compile(schema_common.UUID_RE)


def parse(qs, version, snapshot):
    """Filters from the query ``{name: [values]}`` (names already checked
    against the microversion); names are checked against ``snapshot``."""
    mv = version.as_tuple()
    filters = {}
    if 'name' in qs:
        filters['name'] = qs['name'][-1]
    for key in ('uuid', 'in_tree'):
        if key in qs:
            value = qs[key][-1]
            if not _UUID.match(value):
                raise exception.BadRequest(
                    "Invalid query string parameters: %r is not a 'uuid'. "
                    "Failed validating 'format' in schema['properties'][%r]."
                    % (value, key)
                )
            filters[key] = util.normalize_uuid(value)
    try:
        if 'member_of' in qs:
            filters['member_of'] = candidates.parse_member_of(
                qs['member_of'], mv
            )
        if 'required' in qs:
            filters['required'] = _required(
                qs['required'], mv, snapshot.traits
            )
        if 'resources' in qs:
            filters['resources'] = _resources(
                qs['resources'][-1], snapshot.resource_classes
            )
    except candidates.CandidatesQueryError as exc:
        raise exception.BadRequest(exc.detail, error_code=exc.code) from exc
    return filters


def _required(values, mv, known):
    required, forbidden = candidates.parse_trait_expr(values, mv)
    missing = sorted(({t for s in required for t in s} | forbidden) - known)
    if missing:
        raise exception.BadRequest(
            'Invalid trait(s) in "required" parameter: No such trait(s): '
            '%s.' % ', '.join(missing)
        )
    # A trait both required and forbidden simply matches no provider.
    return required, forbidden


def _resources(value, known):
    resources = candidates.parse_resources(value)
    for rc in resources:
        if rc not in known:
            raise exception.BadRequest(
                'Invalid resource class in resources parameter: %s' % rc
            )
    return resources


def _holds(wanted, have):
    """Whether ``have`` (a provider's aggregates or traits) meets
    ``wanted``, ``(any_sets, forbidden)`` or None: none of the
    forbidden, and one of each of the any-sets."""
    if wanted is None:
        return True
    any_sets, forbidden = wanted
    return not forbidden & have and all(s & have for s in any_sets)


def filter_providers(
    snapshot,
    *,
    name=None,
    uuid=None,
    member_of=None,
    resources=None,
    in_tree=None,
    required=None,
):
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
        if not _holds(member_of, p.aggregates) or not _holds(
            required, p.traits
        ):
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
