"""``GET /identity`` and ``GET /identity/v3``: an identity version document
for clients of a noauth2 cloud (development only; no Keystone).

The openstack CLI asks the identity service for its version before some
commands (``server list`` insists on identity v3) even when it will never
call it. With ``[api] auth_strategy = noauth2`` these paths answer a
Keystone-shaped version document, so a ``clouds.yaml`` can name
``<nimbus-api>/identity/v3`` as its ``identity_endpoint_override``.

Project lookups answer too (``GET /identity/v3/projects/{id}`` and
``GET /identity/v3/projects?name=X``): under noauth2 a project is whatever
a token names, so every well-formed name is a project whose id is that
name. ``openstack quota set ... PROJECT`` looks its project up this way
before it writes the quota. Users, roles and tokens do not exist here.
With keystone all these paths are 404: the real Keystone answers them.
"""

import re

from nimbus.api import util
from nimbus.common.wsgi import errors

PREFIX = '/identity'
PATHS = (PREFIX, PREFIX + '/', PREFIX + '/v3', PREFIX + '/v3/')
PROJECTS = PREFIX + '/v3/projects'
PROJECT = PROJECTS + '/{project_id}'
# A project id as the compute API takes one in a path (Keystone's ids and
# names are at most 64 characters).
_PROJECT_ID = re.compile(r'^[^/\x00-\x1f]{1,64}$')


def _v3(req):
    return {
        'id': 'v3.14',
        'status': 'stable',
        'updated': '2020-04-07T00:00:00Z',
        'links': [
            {'rel': 'self', 'href': util.base_url(req) + PREFIX + '/v3/'}
        ],
        'media-types': [
            {
                'base': 'application/json',
                'type': 'application/vnd.openstack.identity-v3+json',
            }
        ],
    }


def _noauth2_only(req):
    if util.deps(req).conf.api.auth_strategy != 'noauth2':
        raise errors.HTTPError(404, 'The resource could not be found.')


def _project(req, project_id):
    return {
        'id': project_id,
        'name': project_id,
        'domain_id': 'default',
        'parent_id': 'default',
        'description': '',
        'enabled': True,
        'is_domain': False,
        'tags': [],
        'options': {},
        'links': {
            'self': '%s%s/%s' % (util.base_url(req), PROJECTS, project_id)
        },
    }


def show_project(req, resp, project_id):
    _noauth2_only(req)
    if not _PROJECT_ID.match(project_id):
        raise errors.HTTPError(
            404, 'Could not find project: %s.' % project_id[:64]
        )
    resp.media = {'project': _project(req, project_id)}


def list_projects(req, resp):
    """Only by name (what clients look a project up with); a bare list has
    nothing to enumerate under noauth2 and answers an empty one."""
    _noauth2_only(req)
    name = req.get_param('name')
    projects = []
    if name is not None:
        if not _PROJECT_ID.match(name):
            raise errors.HTTPError(
                400,
                'Invalid project name: %r (1 to 64 characters, no "/" '
                'nor control characters).' % name[:64],
            )
        projects.append(_project(req, name))
    resp.media = {
        'projects': projects,
        'links': {
            'self': util.base_url(req) + PROJECTS,
            'next': None,
            'previous': None,
        },
    }


def version(req, resp):
    _noauth2_only(req)
    if req.path.rstrip('/').endswith('/v3'):
        resp.media = {'version': _v3(req)}
    else:
        resp.media = {'versions': {'values': [_v3(req)]}}
