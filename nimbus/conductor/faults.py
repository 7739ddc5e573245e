"""What the fault of an unplaced instance says: a one-line summary that
names placement's count and the filter that eliminated the most hosts
(:func:`fault_summary`), and the scheduler's explanation as text for the
details (:func:`explanation_text`). Pure functions of the scheduler's
explanation dict, so the super conductor only decides when to write one.
"""

NO_VALID_HOST = 'No valid host was found.'


def _steps(explanation):
    return list(explanation.get('pre_filters') or []) + list(
        explanation.get('filters') or []
    )


# What the scheduler records for an unplaced instance with no reason of its
# own.
GENERIC_REASONS = ('did not fit', '')


def specific_reason(detail):
    reason = (detail or {}).get('message')
    if (
        not isinstance(reason, str)
        or reason.strip() in GENERIC_REASONS
        or reason.startswith('No valid host')
    ):
        return None
    return reason.strip()


def explains(detail):
    """Does an explanation show what stopped the instance?"""
    return (
        bool(detail.get('later'))
        or any(
            int(s.get('in', 0)) > int(s.get('out', 0)) for s in _steps(detail)
        )
        or detail.get('placement_candidates') == 0
    )


def fault_summary(
    explanation, placed=None, requested=None, reason=None, fallback=None
):
    """The fault's one-line message: how many hosts placement returned and
    the step (filter) that eliminated the most of them, e.g. ``No valid host
    was found: placement returned 20 hosts; NUMATopologyFilter rejected
    17``. An instance's own ``reason`` (a lost claim) replaces the funnel;
    without an explanation, the first line of ``reason`` or ``fallback``
    (or nothing) follows ``No valid host was found``."""
    explanation = explanation or {}
    if placed is None and requested is None:
        placed, requested = (
            explanation.get('placed'),
            explanation.get('requested'),
        )
    parts = []
    if requested and placed is not None and requested > 1:
        parts.append('placed %d of %d' % (placed, requested))
    count = explanation.get('placement_candidates')
    if reason and count is not None:
        parts.append(str(reason).strip().splitlines()[0])
        return ('No valid host was found: ' + '; '.join(parts))[:255]
    if count is not None:
        parts.append(
            'placement returned %d host%s' % (count, '' if count == 1 else 's')
        )
    worst = None
    for step in _steps(explanation):
        out = int(step.get('in', 0)) - int(step.get('out', 0))
        if out > 0 and (worst is None or out > worst[1]):
            worst = (step.get('name'), out)
    if worst is not None:
        parts.append('%s rejected %d' % worst)
    elif explanation.get('later'):
        parts.append('%s' % explanation['later'][0].get('reason'))
    if count is None:
        text = reason or fallback or explanation.get('message')
        if text:
            parts.append(str(text).strip().splitlines()[0])
    if not parts:
        return NO_VALID_HOST
    return ('No valid host was found: ' + '; '.join(parts))[:255]


def explanation_text(explanation, sample_size=10):
    """Placement's count (or its query when it returned nothing), every
    step's in/out, and a sample of rejected hosts with their reasons."""
    count = explanation.get('placement_candidates') or 0
    query = explanation.get('placement_query')
    if not count and query:
        parts = [
            'placement returned 0 hosts for GET /allocation_candidates?'
            + query
        ]
    else:
        parts = ['placement returned %d hosts' % count]
    for step in _steps(explanation):
        parts.append(
            '%s: %d in, %d out'
            % (step.get('name'), step.get('in', 0), step.get('out', 0))
        )
    text = '; '.join(parts)
    sample = (explanation.get('rejected') or [])[:sample_size]
    if sample:
        text += '. Rejected: ' + '; '.join(
            '%s: %s: %s' % (r.get('host'), r.get('filter'), r.get('reason'))
            for r in sample
        )
    later = (explanation.get('later') or [])[:5]
    if later:
        text += '. Later: ' + '; '.join(
            '%s: %s: %s' % (e.get('host'), e.get('what'), e.get('reason'))
            for e in later
        )
    return text
