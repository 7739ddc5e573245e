"""Flavors and their extra specs in the API database."""

from oslo_db import exception as db_exc
import sqlalchemy as sa

from nimbus.db.api import models


class FlavorNotFound(Exception):
    pass


class FlavorExists(Exception):
    pass


def to_dict(row):
    return {
        'id': row.id,
        'flavorid': row.flavorid,
        'name': row.name,
        'vcpus': row.vcpus,
        'memory_mb': row.memory_mb,
        'root_gb': row.root_gb,
        'ephemeral_gb': row.ephemeral_gb,
        'swap': row.swap,
        'rxtx_factor': row.rxtx_factor,
        'is_public': row.is_public,
        'disabled': row.disabled,
        'description': row.description,
        'created_at': row.created_at,
        'updated_at': row.updated_at,
        'extra_specs': {s.key: s.value for s in row.extra_specs},
        'projects': sorted(p.project_id for p in row.projects),
    }


def spec_dict(flavor):
    """The flavor as the RequestSpec and the instance carry it."""
    return {
        k: flavor[k]
        for k in (
            'name',
            'flavorid',
            'vcpus',
            'memory_mb',
            'root_gb',
            'ephemeral_gb',
            'swap',
            'extra_specs',
        )
    }


def grant(row, project_id):
    """Give ``project_id`` access to a flavor row (flavor access)."""
    row.projects.append(models.FlavorProject(project_id=project_id))


def row_of(session, flavorid):
    row = session.execute(
        sa.select(models.Flavor).where(models.Flavor.flavorid == flavorid)
    ).scalar()
    if row is None:
        raise FlavorNotFound(flavorid)
    return row


_FLAVORS = models.Flavor.__table__
_FLAVOR = sa.select(
    *(c for c in _FLAVORS.c if c.key not in ('extra_specs', 'projects'))
).where(_FLAVORS.c.flavorid == sa.bindparam('flavorid'))
_SPECS = models.FlavorExtraSpec.__table__
_GRANTS = models.FlavorProject.__table__
# A flavor's extra specs and the projects granted it, in one statement:
# (key, value) of each spec, (None, project) of each grant.
_SPECS_AND_PROJECTS = sa.union_all(
    sa.select(_SPECS.c.key.label('key'), _SPECS.c.value.label('value')).where(
        _SPECS.c.flavor_id == sa.bindparam('flavor_id')
    ),
    sa.select(
        sa.null().label('key'), _GRANTS.c.project_id.label('value')
    ).where(_GRANTS.c.flavor_id == sa.bindparam('flavor_id')),
)


def get(db, flavorid):
    """:func:`to_dict` of the flavor ``flavorid`` (or
    :class:`FlavorNotFound`), read with two Core statements made once:
    every create reads its flavor."""
    with db.session() as session:
        connection = session.connection()
        row = connection.execute(_FLAVOR, {'flavorid': flavorid}).first()
        if row is None:
            raise FlavorNotFound(flavorid)
        more = connection.execute(
            _SPECS_AND_PROJECTS, {'flavor_id': row.id}
        ).all()
    flavor = row._asdict()
    flavor['extra_specs'] = {k: v for k, v in more if k is not None}
    flavor['projects'] = sorted(v for k, v in more if k is None)
    return flavor


def list_all(
    db,
    is_public=True,
    min_ram=None,
    min_disk=None,
    sort_key='flavorid',
    sort_dir='asc',
    project_id=None,
):
    """Enabled flavors; ``is_public`` True lists the public ones and,
    with ``project_id``, the private ones granted to that project (as
    Nova), False the private ones, None all."""
    with db.session() as session:
        query = sa.select(models.Flavor).where(
            models.Flavor.disabled.is_(False)
        )
        if is_public and project_id is not None:
            query = query.where(
                sa.or_(
                    models.Flavor.is_public.is_(True),
                    models.Flavor.projects.any(
                        models.FlavorProject.project_id == project_id
                    ),
                )
            )
        elif is_public is not None:
            query = query.where(models.Flavor.is_public.is_(is_public))
        if min_ram is not None:
            query = query.where(models.Flavor.memory_mb >= min_ram)
        if min_disk is not None:
            query = query.where(models.Flavor.root_gb >= min_disk)
        column = getattr(models.Flavor, sort_key)
        order = column.desc() if sort_dir == 'desc' else column.asc()
        query = query.order_by(order, models.Flavor.id.asc())
        return [to_dict(r) for r in session.execute(query).scalars()]


def create(db, values):
    try:
        with db.session() as session:
            clash = session.execute(
                sa.select(models.Flavor).where(
                    sa.or_(
                        models.Flavor.flavorid == values['flavorid'],
                        models.Flavor.name == values['name'],
                    )
                )
            ).scalar()
            if clash is not None:
                which = (
                    'name %s' % values['name']
                    if clash.name == values['name']
                    else 'ID %s' % values['flavorid']
                )
                raise FlavorExists('Flavor with %s already exists.' % which)
            row = models.Flavor(**values)
            session.add(row)
            session.flush()
            return to_dict(row)
    except db_exc.DBDuplicateEntry as exc:
        raise FlavorExists(
            'Flavor with name %s or ID %s already exists.'
            % (values['name'], values['flavorid'])
        ) from exc


def update_description(db, flavorid, description):
    with db.session() as session:
        row = row_of(session, flavorid)
        row.description = description
        session.flush()
        return to_dict(row)


def delete(db, flavorid):
    with db.session() as session:
        session.delete(row_of(session, flavorid))


def set_extra_specs(db, flavorid, specs):
    with db.session() as session:
        row = row_of(session, flavorid)
        existing = {s.key: s for s in row.extra_specs}
        for key, value in specs.items():
            if key in existing:
                existing[key].value = value
            else:
                row.extra_specs.append(
                    models.FlavorExtraSpec(key=key, value=value)
                )
        session.flush()
        return to_dict(row)['extra_specs']


def delete_extra_spec(db, flavorid, key):
    with db.session() as session:
        row = row_of(session, flavorid)
        for spec in list(row.extra_specs):
            if spec.key == key:
                row.extra_specs.remove(spec)
                return True
        return False
