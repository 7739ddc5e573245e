"""Server groups and their members in the API database (the rows are
:mod:`nimbus.db.server_groups`')."""

from nimbus.db import server_groups as group_rows


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
        row = group_rows.get(session, uuid)
        if row is None:
            raise GroupNotFound(uuid)
        return to_dict(row)


def of_instance(db, instance_uuid):
    """The uuids of the groups ``instance_uuid`` is a member of."""
    with db.session() as session:
        return group_rows.groups_of_member(session, instance_uuid)


def list_all(db, project_id=None):
    with db.session() as session:
        return [to_dict(r) for r in group_rows.listing(session, project_id)]


def create(db, name, policy, rules, project_id, user_id):
    with db.session() as session:
        row = group_rows.create(
            session, name, policy, rules, project_id, user_id
        )
        return to_dict(row)


def delete(db, uuid):
    with db.session() as session:
        if not group_rows.delete(session, uuid):
            raise GroupNotFound(uuid)
