"""Default policy rules of the Glance-shaped images API."""

from nimbus.api.policies_base import ANY
from nimbus.api.policies_base import OWNER_OR_ADMIN
from nimbus.api.policies_base import rule

IMAGES = 'nimbus:images:%s'

RULES = [
    rule(
        IMAGES % 'get',
        ANY,
        'List or show images.',
        [('GET', '/v2/images'), ('GET', '/v2/images/{image_id}')],
    ),
    rule(
        IMAGES % 'create',
        OWNER_OR_ADMIN,
        'Create an image.',
        [('POST', '/v2/images')],
    ),
    rule(
        IMAGES % 'modify',
        OWNER_OR_ADMIN,
        "Change an image's properties.",
        [('PUT', '/v2/images/{image_id}'), ('PATCH', '/v2/images/{image_id}')],
    ),
    rule(
        IMAGES % 'delete',
        OWNER_OR_ADMIN,
        'Delete an image.',
        [('DELETE', '/v2/images/{image_id}')],
    ),
]
