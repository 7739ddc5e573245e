"""Quota limits: the ``quotas`` and ``quota_classes`` tables of the API
database (the only module that writes them) and the effective limits.

A project's limit of a resource is, first found: its own row in
``quotas``, the row of class ``default`` in ``quota_classes``, the
``[quota]`` option. -1 means unlimited.
"""

import sqlalchemy as sa

from nimbus.db.api import models as api_models

DEFAULT_CLASS = 'default'

# resource name -> [quota] option name (Nova's names).
OPTIONS = {
    'instances': 'instances',
    'cores': 'cores',
    'ram': 'ram',
    'metadata_items': 'metadata_items',
    'injected_files': 'injected_files',
    'injected_file_content_bytes': 'injected_file_content_bytes',
    'injected_file_path_bytes': 'injected_file_path_length',
    'key_pairs': 'key_pairs',
    'server_groups': 'server_groups',
    'server_group_members': 'server_group_members',
}
# Network proxies below microversion 2.36: shown with the values Nova
# used, never enforced (there is no nova-network), and not updatable.
LEGACY = {
    'fixed_ips': -1,
    'floating_ips': 10,
    'security_groups': 10,
    'security_group_rules': 20,
}
REMOVED_2_57 = (
    'injected_files',
    'injected_file_content_bytes',
    'injected_file_path_bytes',
)
# Resources counted per project (the others are per request or per user).
COUNTED = ('instances', 'cores', 'ram', 'server_groups')


def resources(version):
    """The resource names a response at ``version`` shows, sorted."""
    names = set(OPTIONS)
    if version < (2, 36):
        names.update(LEGACY)
    if version >= (2, 57):
        names.difference_update(REMOVED_2_57)
    return sorted(names)


def _rows_in(session, model, column, key):
    return {
        row.resource: row.hard_limit
        for row in session.execute(
            sa.select(model.resource, model.hard_limit).where(column == key)
        )
    }


def _option_limits(conf):
    limits = {name: conf.quota[opt] for name, opt in OPTIONS.items()}
    limits.update(LEGACY)
    return limits


def class_limits(conf, api_db, class_name=DEFAULT_CLASS):
    """Limits of a quota class: the options, overridden by the class rows
    (only class ``default`` falls back to the options' values for every
    resource; another class shows the options too, as Nova does)."""
    limits = _option_limits(conf)
    with api_db.session() as session:
        limits.update(
            _rows_in(
                session,
                api_models.QuotaClass,
                api_models.QuotaClass.class_name,
                class_name,
            )
        )
    return limits


def defaults(conf, api_db):
    """What a project without its own limits gets."""
    return class_limits(conf, api_db, DEFAULT_CLASS)


def _limit_rows():
    classes = api_models.QuotaClass.__table__
    projects = api_models.Quota.__table__
    return sa.union_all(
        sa.select(
            sa.literal(0).label('source'),
            classes.c.resource,
            classes.c.hard_limit,
        ).where(classes.c.class_name == sa.bindparam('class_name')),
        sa.select(
            sa.literal(1).label('source'),
            projects.c.resource,
            projects.c.hard_limit,
        ).where(projects.c.project_id == sa.bindparam('project_id')),
    )


# The default class's rows and the project's, in one statement made once.
_LIMIT_ROWS = _limit_rows()


def project_limits_in(session, conf, project_id):
    """The effective limits of ``project_id``, read in ``session`` (the
    caller's transaction: the default class's rows, then the project's
    over them, read by one statement)."""
    limits = _option_limits(conf)
    rows = session.execute(
        _LIMIT_ROWS, {'class_name': DEFAULT_CLASS, 'project_id': project_id}
    ).all()
    for source in (0, 1):
        limits.update(
            {
                row.resource: row.hard_limit
                for row in rows
                if row.source == source
            }
        )
    return limits


def project_limits(conf, api_db, project_id):
    """The effective limits of ``project_id`` (one transaction)."""
    with api_db.session() as session:
        return project_limits_in(session, conf, project_id)


def _store_limits(api_db, model, owner, limits):
    """Store ``{resource: hard_limit}`` as rows of ``model`` (Quota or
    QuotaClass) of ``owner`` (``{'project_id': ...}`` or
    ``{'class_name': ...}``): a row there is changed, a new one added."""
    ((column, value),) = owner.items()
    with api_db.session() as session:
        for resource, hard_limit in limits.items():
            row = session.execute(
                sa.select(model).where(
                    getattr(model, column) == value, model.resource == resource
                )
            ).scalar()
            if row is None:
                session.add(
                    model(resource=resource, hard_limit=hard_limit, **owner)
                )
            else:
                row.hard_limit = hard_limit


def set_project_limits(api_db, project_id, limits):
    """Store ``{resource: hard_limit}`` as the project's own limits."""
    _store_limits(api_db, api_models.Quota, {'project_id': project_id}, limits)


def delete_project_limits(api_db, project_id):
    """Forget the project's own limits: it gets the defaults again."""
    with api_db.session() as session:
        session.execute(
            sa.delete(api_models.Quota).where(
                api_models.Quota.project_id == project_id
            )
        )


def set_class_limits(api_db, class_name, limits):
    _store_limits(
        api_db, api_models.QuotaClass, {'class_name': class_name}, limits
    )
