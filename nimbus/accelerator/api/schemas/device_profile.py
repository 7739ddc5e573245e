"""Schemas of /v2/device_profiles.

The schema checks the document's structure; :func:`group_problem` checks
each group's keys and values so that a 400 names the exact key.
"""

NAME_PATTERN = '^[a-zA-Z0-9-_]+$'

PROFILE = {
    'type': 'object',
    'properties': {
        'name': {
            'type': 'string',
            'pattern': NAME_PATTERN,
            'minLength': 1,
            'maxLength': 255,
        },
        'description': {'type': ['string', 'null'], 'maxLength': 255},
        'uuid': {'type': 'string', 'format': 'uuid'},
        'groups': {
            'type': 'array',
            'minItems': 1,
            'items': {'type': 'object', 'minProperties': 1},
        },
    },
    'required': ['name', 'groups'],
    'additionalProperties': False,
}

# A list holding one profile, as Cyborg takes it (a bare object is a 400
# there too).
CREATE = {'type': 'array', 'minItems': 1, 'maxItems': 1, 'items': PROFILE}

TRAIT_VALUES = ('required', 'forbidden')


def _positive_amount(value):
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 1
    return (
        isinstance(value, str)
        and value.isdigit()
        and not value.startswith('0')
    )


def group_problem(index, group):
    """What is wrong with group ``index`` (a sentence naming the key), or
    None. Keys are ``resources:<RC>`` (a positive integer, or its decimal
    string), ``trait:<TRAIT>`` (``required``/``forbidden``) and
    ``accel:<name>`` (a string); at least one ``resources:`` key."""
    has_resources = False
    for key, value in group.items():
        prefix, _, name = key.partition(':')
        where = "group %d key '%s'" % (index, key)
        if not name:
            return (
                '%s: expected resources:<RC>, trait:<TRAIT> or '
                'accel:<name>' % where
            )
        if prefix == 'resources':
            if not _positive_amount(value):
                return '%s: %r is not a positive integer' % (where, value)
            has_resources = True
        elif prefix == 'trait':
            if value not in TRAIT_VALUES:
                return "%s: %r is neither 'required' nor 'forbidden'" % (
                    where,
                    value,
                )
        elif prefix == 'accel':
            if not isinstance(value, str):
                return '%s: %r is not a string' % (where, value)
        else:
            return (
                '%s: expected resources:<RC>, trait:<TRAIT> or '
                'accel:<name>' % where
            )
    if not has_resources:
        return 'group %d asks for no resources (no resources:<RC> key)' % index
    return None
