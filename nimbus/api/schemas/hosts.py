"""Request schemas of /os-hosts (below microversion 2.43)."""

# ``zone=`` (blank) lists every host, as Nova does.
LIST_QUERY = {
    'type': 'object',
    'properties': {'zone': {'type': 'string', 'maxLength': 255}},
}

# ``enable`` or ``disable`` in any letter case, as Nova accepts them.
_TOGGLE = {'type': 'string', 'pattern': '^\\s*(?i:enable|disable)\\s*$'}

# At least one of the two (checked by the handler, whose message names
# them; an anyOf's message names neither).
UPDATE = {
    'type': 'object',
    'properties': {'status': _TOGGLE, 'maintenance_mode': _TOGGLE},
    'additionalProperties': False,
}
