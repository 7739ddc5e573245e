"""JSON schema fragments shared by the compute API's schemas.

The schemas of the request bodies and queries look alike (an object, its
properties, ``required``, ``additionalProperties``), and that is by
design: each is written out whole as the contract of one route and
microversion, so that it reads as the API reference (and the generated
OpenAPI) shows it; the fragments they share in meaning live here."""

NAME = {
    'type': 'string',
    'minLength': 1,
    'maxLength': 255,
    'pattern': r'^(?! )[^\x00-\x1f\x7f]*(?<! )$',
}
NAME_LOOSE = {'type': 'string', 'minLength': 1, 'maxLength': 255}
UUID = {
    'type': 'string',
    'format': 'uuid',
    'pattern': '^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?'
    '[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$',
}
NON_NEG_INT_STR = {'type': 'string', 'pattern': r'^[0-9]+$'}
POS_INT_STR = {'type': 'string', 'pattern': r'^[1-9][0-9]*$'}
BOOL_STR = {
    'type': 'string',
    'pattern': r'^([01tTfFyYnN]|[tT][rR][uU][eE]|[fF][aA][lL][sS][eE]|'
    r'[oO][nN]|[oO][fF][fF]|[yY][eE][sS]|[nN][oO])$',
}
# A boolean as Nova's API accepts one in a body: true/false or one of
# these strings (util.boolish reads them).
BOOLEAN = {
    'type': ['boolean', 'string'],
    'enum': [
        True,
        'True',
        'TRUE',
        'true',
        '1',
        'ON',
        'On',
        'on',
        'YES',
        'Yes',
        'yes',
        'y',
        't',
        False,
        'False',
        'FALSE',
        'false',
        '0',
        'OFF',
        'Off',
        'off',
        'NO',
        'No',
        'no',
        'n',
        'f',
    ],
}
METADATA = {
    'type': 'object',
    'patternProperties': {
        r'^[a-zA-Z0-9-_:. ]{1,255}$': {'type': 'string', 'maxLength': 255}
    },
    'additionalProperties': False,
}
PAGING = {'limit': NON_NEG_INT_STR, 'marker': {'type': 'string'}}

# A body-less action: null, as Nova's clients send it (an empty object is
# taken too).
NO_BODY = {
    'oneOf': [
        {'type': 'null'},
        {'type': 'object', 'additionalProperties': False},
    ]
}
