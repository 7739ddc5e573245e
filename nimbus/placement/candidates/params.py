"""Parsing and validation of ``GET /allocation_candidates`` query parameters.

``params`` is always ``dict[str, list[str]]``: parameter name -> every value
given, in order.  Microversions are ``(major, minor)`` tuples.

Parameter availability by microversion (older versions reject the name as an
unknown parameter):

=================  =====  ==================================================
parameter          from   notes
=================  =====  ==================================================
resources          1.10   ``RC:AMOUNT,RC:AMOUNT``
limit              1.16   positive integer
required           1.17   ``!TRAIT`` (forbidden) from 1.22, ``in:A,B`` 1.39,
                          repeating the parameter (ANDed) from 1.39
member_of          1.21   ``in:`` list ORed; repeats ANDed from 1.24;
                          ``!agg`` / ``!in:a,b`` forbidden from 1.32
suffixed groups    1.25   ``resourcesN`` etc.; from 1.33 any suffix of
                          ``[a-zA-Z0-9_-]{1,64}`` (``resources_GPU``;
                          ``resources_device_profile_0``, suffix
                          ``_device_profile_0``, from the scheduler's
                          accelerator request filter)
group_policy       1.25   ``none`` | ``isolate``; required with more than one
                          suffixed group
in_tree            1.31   provider uuid (also ``in_treeN``)
root_required      1.35   traits (``!`` allowed, no ``in:``) of the root
same_subtree       1.36   comma list of suffixes; resourceless suffixed
                          groups allowed only when named in one
=================  =====  ==================================================

Repeated parameters are read as OpenStack Placement 16.0.0 reads them:
``resources<S>`` and ``in_tree<S>`` count with their last value, ``limit``
and ``group_policy`` with their first, ``required<S>`` with its last before
1.39 (all of them from 1.39), ``member_of<S>`` is refused before 1.24 and
``root_required`` always. Error codes are Placement's too: the
``placement.query.*`` codes only for ``root_required``, ``same_subtree`` and
the resourceless-group rules of 1.36, ``placement.undefined_code`` for the
rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from nimbus.placement.candidates.values import (
    canonical_uuid,
    is_uuid,
    parse_member_of,
    parse_resources,
    parse_trait_expr,
)
from nimbus.placement.candidates.errors import (
    BAD_VALUE,
    DUPLICATE_KEY,
    MISSING_VALUE,
    UNDEFINED,
    CandidatesQueryError,
)

# The JSON schema validator's words for a key the schema does not allow,
# which clients and tests look for (as OpenStack Placement answers).
_GROUP_KEY = re.compile(r'^(resources|required|member_of|in_tree)(.*)$')
_NUMERIC_SUFFIX = re.compile(r'^[1-9][0-9]*$')
_VERBOSE_SUFFIX = re.compile(r'^[a-zA-Z0-9_-]{1,64}$')
_LIMIT = re.compile(r'^[1-9][0-9]*$')

_PREFIX_MIN = {
    'resources': (1, 10),
    'required': (1, 17),
    'member_of': (1, 21),
    'in_tree': (1, 31),
}
_WIDE_MIN = {
    'limit': (1, 16),
    'group_policy': (1, 25),
    'root_required': (1, 35),
    'same_subtree': (1, 36),
}


def _mv(v):
    return '%d.%d' % v


@dataclass(slots=True)
class RequestGroup:
    """One request group.  ``suffix`` is '' for the unnumbered group.

    ``required`` is a tuple of frozensets: every set must be matched by at
    least one of its traits (AND of ORs).  ``member_of`` has the same shape
    for aggregates.  ``forbidden``/``forbidden_aggs`` are plain frozensets.
    """

    suffix: str
    resources: dict[str, int] = field(default_factory=dict)
    required: tuple = ()
    forbidden: frozenset = frozenset()
    member_of: tuple = ()
    forbidden_aggs: frozenset = frozenset()
    in_tree: str | None = None

    @property
    def granular(self) -> bool:
        """Suffixed groups must be satisfied by one provider each."""
        return self.suffix != ''


@dataclass(slots=True)
class ParsedRequest:
    """Everything a ``GET /allocation_candidates`` query asks for."""

    groups: dict[str, RequestGroup]
    limit: int | None = None
    group_policy: str | None = None
    root_required: frozenset = frozenset()
    root_forbidden: frozenset = frozenset()
    same_subtrees: tuple = ()


def _not_allowed(key: str, mv: tuple[int, int], hint: str = '') -> str:
    """The detail for a query key the microversion does not allow, in the
    words jsonschema uses for Placement's query schema at ``mv`` (fixed
    properties before 1.25, group patterns from then on), which tools and
    tests look for; ``hint`` says what would allow it."""
    if mv < (1, 25):
        words = (
            'Additional properties are not allowed (%r was unexpected)' % key
        )
    else:
        suffix = '[a-zA-Z0-9_-]{1,64}' if mv >= (1, 33) else '[1-9][0-9]*'
        patterns = sorted(
            '^%s(%s)?$' % (prefix, suffix)
            for prefix, need in _PREFIX_MIN.items()
            if mv >= need
        )
        words = '%r does not match any of the regexes: %s' % (
            key,
            ', '.join(repr(p) for p in patterns),
        )
    return (
        'Invalid query string parameters: %s. Failed validating '
        "'additionalProperties' in schema.%s"
        % (words, ' ' + hint if hint else '')
    )


def _check_key(key: str, mv: tuple[int, int]):
    """Return (prefix, suffix) for a group key, None for a request-wide key;
    raise for anything unknown at this microversion."""
    if key in _WIDE_MIN:
        need = _WIDE_MIN[key]
        if mv < need:
            raise CandidatesQueryError(
                _not_allowed(
                    key,
                    mv,
                    '(%r requires microversion %s or later; requested '
                    '%s.)' % (key, _mv(need), _mv(mv)),
                )
            )
        return None
    m = _GROUP_KEY.match(key)
    if not m:
        raise CandidatesQueryError(_not_allowed(key, mv))
    prefix, suffix = m.groups()
    need = _PREFIX_MIN[prefix]
    if mv < need:
        raise CandidatesQueryError(
            _not_allowed(
                key,
                mv,
                '(%r requires microversion %s or later; requested %s.)'
                % (key, _mv(need), _mv(mv)),
            )
        )
    if suffix:
        if mv < (1, 25):
            raise CandidatesQueryError(
                _not_allowed(
                    key,
                    mv,
                    '(Suffixed request groups require microversion '
                    '1.25 or later.)',
                )
            )
        if _NUMERIC_SUFFIX.match(suffix):
            pass
        elif mv < (1, 33):
            raise CandidatesQueryError(
                _not_allowed(
                    key,
                    mv,
                    '(Non-numeric request group suffixes require '
                    'microversion 1.33 or later.)'
                    if _VERBOSE_SUFFIX.match(suffix)
                    else '',
                )
            )
        elif not _VERBOSE_SUFFIX.match(suffix):
            raise CandidatesQueryError(
                _not_allowed(
                    key,
                    mv,
                    '(A group suffix is 1-64 characters of [a-zA-Z0-9_-].)',
                )
            )
    return prefix, suffix


def parse_request(
    params: dict[str, list[str]], mv: tuple[int, int]
) -> ParsedRequest:
    """Check syntax and microversion rules; no database names are checked."""
    groups: dict[str, dict] = {}
    wide = {}
    for key in params:
        kind = _check_key(key, mv)
        if kind is None:
            wide[key] = params[key]
        else:
            prefix, suffix = kind
            groups.setdefault(suffix, {})[prefix] = key
    if mv < (1, 25) and 'resources' not in params:
        raise CandidatesQueryError(
            "Invalid query string parameters: 'resources' is a required "
            "property. Failed validating 'required' in schema."
        )

    parsed_groups: dict[str, RequestGroup] = {}
    for suffix in sorted(groups, key=lambda s: (s != '', s)):
        keys = groups[suffix]
        g = RequestGroup(suffix)
        if 'resources' in keys:
            key = keys['resources']
            g.resources = parse_resources(params[key][-1], key)
        if 'required' in keys:
            key = keys['required']
            req, forb = parse_trait_expr(params[key], mv, key)
            g.required, g.forbidden = tuple(req), forb
        if 'member_of' in keys:
            key = keys['member_of']
            req, forb = parse_member_of(params[key], mv, key)
            g.member_of, g.forbidden_aggs = tuple(req), forb
        if 'in_tree' in keys:
            key = keys['in_tree']
            value = params[key][-1]
            if not is_uuid(value):
                raise CandidatesQueryError(
                    'Invalid query string parameters: Expected %r parameter '
                    'to be a format of uuid. Got: %s' % (key, value)
                )
            g.in_tree = canonical_uuid(value)
        parsed_groups[suffix] = g

    out = ParsedRequest(parsed_groups)
    if 'limit' in wide:
        # Repeated: every value must be valid, the first one counts.
        for value in params['limit']:
            if not _LIMIT.match(value):
                raise CandidatesQueryError(
                    'Invalid query string parameters: %r does not match '
                    "'^[1-9][0-9]*$'. Failed validating 'pattern' in "
                    "schema['properties']['limit']. ('limit' is a positive "
                    'integer.)' % value
                )
        out.limit = int(params['limit'][0])
    if 'group_policy' in wide:
        for value in params['group_policy']:
            if value not in ('none', 'isolate'):
                raise CandidatesQueryError(
                    'Invalid query string parameters: %r is not one of '
                    "['none', 'isolate']. Failed validating 'enum' in "
                    "schema['properties']['group_policy']." % value
                )
        out.group_policy = params['group_policy'][0]
    if 'root_required' in wide:
        if len(params['root_required']) != 1:
            raise CandidatesQueryError(
                "Query parameter 'root_required' may only be specified once.",
                DUPLICATE_KEY,
            )
        value = params['root_required'][0]
        if value.startswith('in:'):
            raise CandidatesQueryError(
                "Invalid query string parameters: 'root_required' does not "
                "support the 'in:' syntax. Got: %s" % value
            )
        req, forb = parse_trait_expr([value], mv, 'root_required')
        req_set = frozenset(t for s in req for t in s)
        conflicts = req_set & forb
        if conflicts:
            raise CandidatesQueryError(
                'Conflicting required and forbidden traits found in '
                'root_required: %s' % ', '.join(sorted(conflicts)),
                BAD_VALUE,
            )
        out.root_required, out.root_forbidden = req_set, forb
    if 'same_subtree' in wide:
        subtrees = []
        for value in params['same_subtree']:
            suffixes = frozenset(s.strip() for s in value.split(','))
            if '' in suffixes:
                raise CandidatesQueryError(
                    'Empty string (unsuffixed group) can not be specified in '
                    "'same_subtree'. Got: %r" % value,
                    BAD_VALUE,
                )
            subtrees.append(suffixes)
        out.same_subtrees = tuple(subtrees)
    _check_groups(out, mv)
    return out


def _check_groups(req: ParsedRequest, mv):
    groups = req.groups
    if mv >= (1, 36):
        resourceless = [s for s, g in groups.items() if not g.resources]
        if len(resourceless) == len(groups):
            raise CandidatesQueryError(
                'There must be at least one resources or resources[$S] '
                'parameter.',
                MISSING_VALUE,
            )
        if '' in resourceless:
            raise CandidatesQueryError(
                'The unsuffixed request group (required, member_of or '
                "in_tree) must also specify 'resources'.",
                BAD_VALUE,
            )
        in_subtree = set().union(*req.same_subtrees)
        bad = [s for s in resourceless if s not in in_subtree]
        if bad:
            raise CandidatesQueryError(
                'Resourceless suffixed group request should be specified in '
                "'same_subtree' query param: bad group(s) - %s." % bad,
                BAD_VALUE,
            )
        unknown = sorted(s for s in in_subtree if s not in groups)
        if unknown:
            raise CandidatesQueryError(
                "Real suffixes should be specified in 'same_subtree': %s not "
                'found in %s.' % (unknown, sorted(groups)),
                BAD_VALUE,
            )
    else:
        for key, what, asks in (
            ('required', 'traits', lambda g: g.required or g.forbidden),
            (
                'member_of',
                'member_of',
                lambda g: g.member_of or g.forbidden_aggs,
            ),
        ):
            orphans = [
                key + s
                for s, g in groups.items()
                if asks(g) and not g.resources
            ]
            if orphans:
                raise CandidatesQueryError(
                    'All %s parameters must be associated with resources. '
                    'Found the following orphaned %s keys: %s'
                    % (what, what, ', '.join(orphans))
                )
        bare = ['in_tree' + s for s, g in groups.items() if not g.resources]
        if bare:
            raise CandidatesQueryError(
                'All request groups must specify resources. Found: %s'
                % ', '.join(bare)
            )
        if not groups:
            raise CandidatesQueryError(
                "At least one request group ('resources' or "
                "'resources{$S}') is required."
            )
    if mv >= (1, 22):
        conflicts = []
        for s, g in groups.items():
            for any_of in g.required:
                if any_of <= g.forbidden:
                    conflicts.append(
                        'required%s: (%s)' % (s, ', '.join(sorted(any_of)))
                    )
        if conflicts:
            raise CandidatesQueryError(
                'Conflicting required and forbidden traits found in the '
                'following traits keys: %s' % ', '.join(sorted(conflicts))
            )
    if req.group_policy is None:
        granular = [s for s in groups if s]
        if len(granular) > 1:
            raise CandidatesQueryError(
                "The 'group_policy' parameter is required when specifying "
                'more than one suffixed request group (got %s).'
                % ', '.join('resources' + s for s in granular)
            )


def check_names(req: ParsedRequest, resource_classes, traits):
    """Reject resource classes and traits the snapshot does not know."""
    for g in req.groups.values():
        for rc in g.resources:
            if rc not in resource_classes:
                raise CandidatesQueryError(
                    'Invalid resource class in resources%s parameter: No such '
                    'resource class %s.' % (g.suffix, rc)
                )
    missing = set()
    for g in req.groups.values():
        for any_of in g.required:
            missing |= any_of - traits
        missing |= g.forbidden - traits
    missing |= req.root_required - traits
    missing |= req.root_forbidden - traits
    if missing:
        raise CandidatesQueryError(
            'No such trait(s): %s.' % ', '.join(sorted(missing))
        )


__all__ = [
    'RequestGroup',
    'ParsedRequest',
    'parse_resources',
    'parse_trait_expr',
    'parse_member_of',
    'parse_request',
    'check_names',
    'UNDEFINED',
]
