"""The API database's ``instance_groups`` and ``instance_group_members``
tables (server groups): the only module that writes SQL on them. The
compute API creates, lists and deletes groups
(:mod:`nimbus.api.objects.server_groups`) and adds and removes members with
its servers; the scheduler's reload and the quota count read them."""

import sqlalchemy as sa
from oslo_utils import uuidutils

from nimbus.db.api import models

Group = models.InstanceGroup
Member = models.InstanceGroupMember


def get(session, uuid):
    """The group's row, or None."""
    return session.execute(sa.select(Group).where(Group.uuid == uuid)).scalar()


def listing(session, project_id=None):
    """The group rows, oldest first (one project's with ``project_id``)."""
    query = sa.select(Group).order_by(Group.id)
    if project_id is not None:
        query = query.where(Group.project_id == project_id)
    return list(session.execute(query).scalars())


def groups_of_member(session, instance_uuid):
    """The uuids of the groups ``instance_uuid`` is a member of."""
    return list(
        session.execute(
            sa.select(Group.uuid)
            .join(Member)
            .where(Member.instance_uuid == instance_uuid)
        ).scalars()
    )


def count_of_project(session, project_id):
    return session.execute(
        sa.select(sa.func.count()).where(Group.project_id == project_id)
    ).scalar()


def create(session, name, policy, rules, project_id, user_id):
    row = Group(
        uuid=uuidutils.generate_uuid(),
        name=name,
        policy=policy,
        rules=rules or {},
        project_id=project_id,
        user_id=user_id,
    )
    session.add(row)
    session.flush()
    return row


def delete(session, uuid):
    """Delete the group (its members go with it); False when there is
    none."""
    row = get(session, uuid)
    if row is None:
        return False
    session.delete(row)
    return True


def add_members(session, group_uuid, instance_uuids):
    group = get(session, group_uuid)
    for uuid in instance_uuids:
        group.members.append(Member(instance_uuid=uuid))


def remove_members(session, instance_uuids):
    """These instances leave every group they are in."""
    session.execute(
        sa.delete(Member).where(Member.instance_uuid.in_(list(instance_uuids)))
    )
