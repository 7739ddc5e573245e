"""/flavors/{id}/os-flavor-access and the flavor actions
``addTenantAccess``/``removeTenantAccess`` (POST /flavors/{id}/action).

A private flavor is visible to the admins and to the projects granted it:
they list it, show it and boot it; to anyone else it does not exist. The
access list of a public flavor is a 404, a grant on one a 409 (from 2.7;
below it the grant is stored and changes nothing, as in Nova).
"""

from nimbus.api import policies_access
from nimbus.api import util
from nimbus.api.objects import flavor_access as access_obj
from nimbus.api.objects import flavors as flavor_obj
from nimbus.api.schemas import flavor_access as schema
from nimbus.common.wsgi import errors
from nimbus.common.wsgi import json_body


def _body(flavor_id, projects):
    return {
        'flavor_access': [
            {'flavor_id': flavor_id, 'tenant_id': project}
            for project in projects
        ]
    }


def index(req, resp, flavor_id):
    util.authorize(req, policies_access.FLAVOR_ACCESS)
    try:
        flavor = flavor_obj.get(util.deps(req).api_db, flavor_id)
    except flavor_obj.FlavorNotFound as exc:
        raise util.not_found('Flavor', flavor_id) from exc
    if flavor['is_public']:
        raise errors.HTTPError(
            404, 'Access list not available for public flavors.'
        )
    resp.media = _body(flavor_id, flavor['projects'])


def _add(req, flavor_id, project_id):
    util.authorize(
        req, policies_access.FLAVOR_ACCESS_ACTION % 'add_tenant_access'
    )
    try:
        return access_obj.add(
            util.deps(req).api_db,
            flavor_id,
            project_id,
            allow_public=util.version(req) < (2, 7),
        )
    except access_obj.FlavorIsPublic as exc:
        raise util.conflict('Can not add access to a public flavor.') from exc
    except access_obj.AccessExists as exc:
        raise util.conflict(
            'Flavor access already exists for flavor %s and project %s '
            'combination.' % (flavor_id, project_id)
        ) from exc


def _remove(req, flavor_id, project_id):
    util.authorize(
        req, policies_access.FLAVOR_ACCESS_ACTION % 'remove_tenant_access'
    )
    try:
        return access_obj.remove(util.deps(req).api_db, flavor_id, project_id)
    except access_obj.AccessNotFound as exc:
        raise util.not_found(
            'Flavor access',
            'for flavor %s and project %s combination'
            % (flavor_id, project_id),
        ) from exc


def action(req, resp, flavor_id):
    body = json_body(req, schema.ACTION)
    (name,) = body
    project_id = body[name]['tenant']
    try:
        if name == 'addTenantAccess':
            projects = _add(req, flavor_id, project_id)
        else:
            projects = _remove(req, flavor_id, project_id)
    except flavor_obj.FlavorNotFound as exc:
        raise util.not_found('Flavor', flavor_id) from exc
    resp.media = _body(flavor_id, projects)
