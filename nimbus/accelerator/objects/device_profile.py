"""Device profiles: a name and ordered groups of resources, traits and
``accel:*`` properties; a flavor for devices."""

from oslo_db import exception as db_exc
import sqlalchemy as sa
from oslo_utils import uuidutils

from nimbus.accelerator.db import models as m
from nimbus.accelerator.objects import arq as arq_obj
from nimbus.accelerator.objects import base

_DP = m.DeviceProfile.__table__


class NotFound(LookupError):
    pass


class DuplicateName(ValueError):
    pass


class InUse(ValueError):
    """ARQs still name the profile."""

    def __init__(self, name, count):
        super().__init__(
            'device profile %s is used by %d accelerator '
            'request(s); delete them first' % (name, count)
        )
        self.name = name


def _row(row):
    return {
        'uuid': row.uuid,
        'name': row.name,
        'description': row.description,
        'groups': row.groups,
        'created_at': row.created_at,
        'updated_at': row.updated_at,
    }


def create(adb, name, groups, description=None, uuid=None):
    """The new profile (a dict); DuplicateName when the name is taken."""
    values = {
        'uuid': uuid or uuidutils.generate_uuid(),
        'name': name,
        'description': description,
        'groups': groups,
        'created_at': base.utcnow(),
    }

    def insert(conn):
        if (
            conn.execute(sa.select(_DP.c.id).where(_DP.c.name == name)).first()
            is not None
        ):
            raise DuplicateName(name)
        conn.execute(_DP.insert().values(**values))

    try:
        adb.write(insert)
    except db_exc.DBDuplicateEntry as exc:
        raise DuplicateName(name) from exc
    values['updated_at'] = None
    return values


def list_profiles(adb, name=None):
    return adb.rows(base.listing(_DP, name=name), _row)


def _get(adb, column, value):
    query = sa.select(_DP).where(column == value)
    return _row(adb.first(query, NotFound, value))


def get_by_uuid(adb, uuid):
    return _get(adb, _DP.c.uuid, uuid)


def get_by_name(adb, name):
    return _get(adb, _DP.c.name, name)


def _delete(conn, profile_row):
    used = arq_obj.count_for_profile(conn, profile_row.name)
    if used:
        raise InUse(profile_row.name, used)
    conn.execute(_DP.delete().where(_DP.c.id == profile_row.id))


def delete(adb, uuid):
    """Delete by uuid; NotFound, or InUse while ARQs name it."""

    def run(conn):
        row = conn.execute(sa.select(_DP).where(_DP.c.uuid == uuid)).first()
        if row is None:
            raise NotFound(uuid)
        _delete(conn, row)

    adb.write(run)


def delete_by_names(adb, names):
    """Delete every named profile in one transaction: all or none
    (NotFound naming the first missing, InUse naming the first used)."""

    def run(conn):
        for name in names:
            row = conn.execute(
                sa.select(_DP).where(_DP.c.name == name)
            ).first()
            if row is None:
                raise NotFound(name)
            _delete(conn, row)

    adb.write(run)
