"""The grammar of one ``GET /allocation_candidates`` parameter value:
resource amounts, trait expressions and ``member_of`` aggregate
expressions (:mod:`nimbus.placement.candidates.params` reads the query as
a whole: which parameters, groups and microversions)."""

from __future__ import annotations

import uuid as uuidlib

from nimbus.placement.candidates.errors import CandidatesQueryError


def parse_resources(value: str, name: str = 'resources') -> dict[str, int]:
    """Parse ``VCPU:2,MEMORY_MB:1024`` into ``{'VCPU': 2, 'MEMORY_MB': 1024}``.

    Resource class names are not checked against the database here.
    """
    if value.strip() == '':
        raise CandidatesQueryError(
            'Badly formed %s parameter: expected a value like '
            "'VCPU:2,MEMORY_MB:1024', got an empty string." % name
        )
    result: dict[str, int] = {}
    for item in value.split(','):
        parts = item.split(':')
        if len(parts) != 2 or not parts[0].strip():
            raise CandidatesQueryError(
                'Badly formed %s parameter: expected RESOURCE_CLASS:AMOUNT '
                "items like 'VCPU:2,MEMORY_MB:1024', got %r." % (name, item)
            )
        rc, amount = parts[0].strip(), parts[1].strip()
        try:
            amount_i = int(amount)
        except ValueError:
            raise CandidatesQueryError(
                'Requested resource %s in %s expected positive integer '
                'amount. Got: %s.' % (rc, name, amount)
            ) from None
        if amount_i < 1:
            raise CandidatesQueryError(
                'Requested resource %s in %s requires amount >= 1. Got: %d.'
                % (rc, name, amount_i)
            )
        # A class named twice counts with its last amount (as Placement).
        result[rc] = amount_i
    return result


def _split_names(text: str, name: str, raw: str) -> list[str]:
    items = [s.strip() for s in text.split(',')]
    if not all(items):
        raise CandidatesQueryError(
            'Invalid query string parameters: %s has an empty trait name '
            'in %r.' % (name, raw)
        )
    return items


def parse_trait_expr(
    values: list[str], microversion: tuple[int, int], name: str = 'required'
):
    """Parse every value of one ``required<suffix>`` parameter.

    Returns ``(required, forbidden)``: ``required`` is a list of frozensets
    of trait names (a provider set must have at least one trait of every
    frozenset: AND of ORs) and ``forbidden`` a frozenset of trait names.
    ``A,!B`` gives ``([{'A'}], {'B'})``; ``in:A,B`` gives ``([{'A','B'}],
    {})``.  Trait names are not checked against the database here.
    """
    allow_forbidden = microversion >= (1, 22)
    allow_any = microversion >= (1, 39)
    if not allow_any:
        # Before 1.39 a repeated parameter counts with its last value.
        values = values[-1:]
    required: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for raw in values:
        if raw.startswith('in:'):
            if not allow_any:
                raise CandidatesQueryError(
                    "Invalid query string parameters: the 'in:' syntax in %s "
                    'requires microversion 1.39 or later. Got: %s'
                    % (name, raw)
                )
            items = _split_names(raw[3:], name, raw)
            if any(t.startswith('!') for t in items):
                raise CandidatesQueryError(
                    'Invalid query string parameters: forbidden traits '
                    "('!') are not allowed inside an 'in:' list of %s. "
                    'Got: %s' % (name, raw)
                )
            required.append(frozenset(items))
            continue
        for t in _split_names(raw, name, raw):
            if t.startswith('!'):
                if not allow_forbidden:
                    raise CandidatesQueryError(
                        'Invalid query string parameters: forbidden traits '
                        "('!TRAIT') in %s require microversion 1.22 or "
                        'later. Got: %s' % (name, raw)
                    )
                # Any number of '!' forbid the trait, as in Placement.
                bare = t.lstrip('!').strip()
                if not bare:
                    raise CandidatesQueryError(
                        'Invalid query string parameters: malformed '
                        'forbidden trait %r in %s.' % (t, name)
                    )
                forbidden.add(bare)
            else:
                required.append(frozenset((t,)))
    dedup = list(dict.fromkeys(required))
    return dedup, frozenset(forbidden)


def is_uuid(value: str) -> bool:
    try:
        uuidlib.UUID(value.strip())
    except (ValueError, TypeError, AttributeError):
        return False
    return True


def parse_member_of(
    values: list[str], microversion: tuple[int, int], name: str = 'member_of'
):
    """Parse every value of one ``member_of<suffix>`` parameter.

    Returns ``(required, forbidden)``: ``required`` is a list of frozensets
    of aggregate uuids (a provider must be in at least one aggregate of every
    frozenset) and ``forbidden`` a frozenset of aggregate uuids none of which
    may be used.  ``in:a,b`` is one frozenset; ``!a`` and ``!in:a,b`` (1.32+)
    add to ``forbidden``.
    """
    if len(values) > 1 and microversion < (1, 24):
        raise CandidatesQueryError(
            'Multiple %s parameters are not supported before microversion '
            '1.24.' % name
        )
    required: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for raw in values:
        value = raw
        negative = value.startswith('!')
        if negative:
            if microversion < (1, 32):
                raise CandidatesQueryError(
                    'Invalid query string parameters: forbidden aggregates '
                    "('!') in %s require microversion 1.32 or later. Got: %s"
                    % (name, raw)
                )
            value = value[1:]
        if value.startswith('in:'):
            items = [s.strip() for s in value[3:].split(',')]
        elif ',' in value:
            raise CandidatesQueryError(
                "Multiple values for %r must be prefixed with the 'in:' (or "
                "'!in:') keyword. Got: %s" % (name, raw)
            )
        else:
            items = [value.strip()]
        for agg in items:
            if agg.startswith('!'):
                raise CandidatesQueryError(
                    "Invalid query string parameters: '!' is not allowed "
                    "inside an 'in:' list of %s; use '!in:' instead. Got: %s"
                    % (name, raw)
                )
            if not is_uuid(agg):
                raise CandidatesQueryError(
                    'Invalid query string parameters: Expected %r parameter '
                    'to contain valid UUID(s). Got: %s' % (name, agg)
                )
        items = [canonical_uuid(agg) for agg in items]
        if negative:
            forbidden.update(items)
        else:
            required.append(frozenset(items))
    return list(dict.fromkeys(required)), frozenset(forbidden)


def canonical_uuid(value: str) -> str:
    return str(uuidlib.UUID(value.strip()))
