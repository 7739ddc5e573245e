"""/resource_providers/{uuid}/usages and /usages (1.9; by type 1.38)."""

import re

from nimbus.placement import exception
from nimbus.placement.handlers import util
from nimbus.placement.objects import usage as usage_obj

# GET /usages' consumer_type, as Placement's schema has it ('all' is
# matched as a prefix there too)
_CONSUMER_TYPE = re.compile(r'^[A-Z0-9_]+$|^all|^unknown$')


@util.json_only
def for_provider(state, req, resp, uuid):
    util.authorize(state, req, 'placement:resource_providers:usages')
    util.send_of_provider(
        state, req, resp, uuid, 'usages', usage_obj.for_provider
    )


@util.since((1, 9))
@util.json_only
def for_project(state, req, resp):
    version = util.version(req)
    allowed = ['project_id', 'user_id']
    if version >= (1, 38):
        allowed.append('consumer_type')
    util.check_query(req, allowed)
    project_id = util.single(req, 'project_id')
    if not project_id:
        raise exception.BadRequest(
            "Invalid query string parameters: 'project_id' is a required "
            "property. Failed validating 'required' in schema."
        )
    user_id = util.single(req, 'user_id')
    for name, value in (('project_id', project_id), ('user_id', user_id)):
        if value is not None and not 1 <= len(value) <= 255:
            # Placement's schema: 1 to 255 characters.
            raise exception.BadRequest(
                'Invalid query string parameters: %r is too %s (%s must be '
                '1 to 255 characters)'
                % (
                    value if len(value) <= 40 else value[:40] + '...',
                    'long' if len(value) > 255 else 'short',
                    name,
                )
            )
    util.authorize(
        state,
        req,
        'placement:usages',
        {'project_id': project_id, 'user_id': req.context['ctx'].user_id},
    )
    ctype = util.single(req, 'consumer_type')
    if ctype is not None and not _CONSUMER_TYPE.match(ctype):
        # Placement's schema: a type name, 'all' or 'unknown'
        raise exception.BadRequest(
            'Invalid query string parameters: %r does not match %r. Failed '
            "validating 'pattern' in schema['properties']['consumer_type']."
            % (ctype, _CONSUMER_TYPE.pattern)
        )
    rows = state.pdb.read(usage_obj.for_project, project_id, user_id, ctype)
    util.send(
        req,
        resp,
        {'usages': usage_obj.summarize(rows, version >= (1, 38), ctype)},
    )
