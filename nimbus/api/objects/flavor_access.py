"""Flavor access: the projects granted a private flavor (the only module
that writes the ``flavor_projects`` table), and who may see a flavor."""

from oslo_db import exception as db_exc

from nimbus.api.objects import flavors as flavor_obj


class FlavorIsPublic(Exception):
    pass


class AccessExists(Exception):
    pass


class AccessNotFound(Exception):
    pass


def visible(flavor, ctx):
    """A public flavor is everyone's; a private one its granted projects'
    and the admins' (to anyone else it does not exist, as in Nova)."""
    return (
        flavor['is_public']
        or ctx.is_admin
        or ctx.project_id in flavor['projects']
    )


def add(db, flavorid, project_id, allow_public=False):
    """Grant ``project_id`` the flavor; returns its projects. A public
    flavor refuses a grant unless ``allow_public`` (Nova below 2.7)."""
    try:
        with db.session() as session:
            row = flavor_obj.row_of(session, flavorid)
            if row.is_public and not allow_public:
                raise FlavorIsPublic(flavorid)
            if any(p.project_id == project_id for p in row.projects):
                raise AccessExists(flavorid, project_id)
            flavor_obj.grant(row, project_id)
            session.flush()
            return sorted(p.project_id for p in row.projects)
    except db_exc.DBDuplicateEntry as exc:
        raise AccessExists(flavorid, project_id) from exc


def remove(db, flavorid, project_id):
    """Revoke ``project_id``'s access; returns the projects left."""
    with db.session() as session:
        row = flavor_obj.row_of(session, flavorid)
        for project in list(row.projects):
            if project.project_id == project_id:
                row.projects.remove(project)
                session.flush()
                return sorted(p.project_id for p in row.projects)
        raise AccessNotFound(flavorid, project_id)
