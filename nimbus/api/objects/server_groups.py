"""Server groups and their members in the API database."""

import sqlalchemy as sa
from oslo_utils import uuidutils

from nimbus.db.api import models


class GroupNotFound(Exception):
    pass


def to_dict(row):
    return {
        'uuid': row.uuid,
        'name': row.name,
        'policy': row.policy,
        'rules': row.rules or {},
        'project_id': row.project_id,
        'user_id': row.user_id,
        'members': sorted(m.instance_uuid for m in row.members),
    }


def get(db, uuid):
    with db.session() as session:
        row = session.execute(
            sa.select(models.InstanceGroup).where(
                models.InstanceGroup.uuid == uuid
            )
        ).scalar()
        if row is None:
            raise GroupNotFound(uuid)
        return to_dict(row)


def of_instance(db, instance_uuid):
    """The uuids of the groups ``instance_uuid`` is a member of."""
    with db.session() as session:
        return list(
            session.execute(
                sa.select(models.InstanceGroup.uuid)
                .join(models.InstanceGroupMember)
                .where(
                    models.InstanceGroupMember.instance_uuid == instance_uuid
                )
            ).scalars()
        )


def list_all(db, project_id=None):
    with db.session() as session:
        query = sa.select(models.InstanceGroup).order_by(
            models.InstanceGroup.id
        )
        if project_id is not None:
            query = query.where(models.InstanceGroup.project_id == project_id)
        return [to_dict(r) for r in session.execute(query).scalars()]


def create(db, name, policy, rules, project_id, user_id):
    with db.session() as session:
        row = models.InstanceGroup(
            uuid=uuidutils.generate_uuid(),
            name=name,
            policy=policy,
            rules=rules or {},
            project_id=project_id,
            user_id=user_id,
        )
        session.add(row)
        session.flush()
        return to_dict(row)


def delete(db, uuid):
    with db.session() as session:
        row = session.execute(
            sa.select(models.InstanceGroup).where(
                models.InstanceGroup.uuid == uuid
            )
        ).scalar()
        if row is None:
            raise GroupNotFound(uuid)
        session.delete(row)
