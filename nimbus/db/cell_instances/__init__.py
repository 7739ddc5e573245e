"""The cell database's ``instances`` table (with its faults and build
attempts): the only module that writes SQL on it. The cell conductor, the
super conductor and the compute API call it.

Every state change is a compare-and-swap, :func:`transition`, the only one:
the UPDATE's WHERE names the states the caller expects (and a live row),
and the transition table of :mod:`nimbus.common.instance_states` must
allow it. Zero rows updated means someone else moved the instance first,
and the caller is told (None).
"""

import datetime
from types import SimpleNamespace

import sqlalchemy as sa

from nimbus.common import instance_states as states
from nimbus.common.db import types
from nimbus.common.objects import request_spec as spec_obj
from nimbus.common.objects import selection as selection_obj
from nimbus.db.cell import models
from nimbus.db.cell_instances import queries

_UPDATABLE = {
    'vm_state',
    'task_state',
    'power_state',
    'host',
    'node',
    'compute_node_uuid',
    'launched_at',
    'terminated_at',
    'deleted',
    'display_name',
    'accel_uuids',
    'availability_zone',
    'build_alternates',
    'deleted_at',
    'image_ref',
    'locked_by',
    'flavor',  # a resize swaps it (issue 24, section 2)
    'hidden',  # a cross-cell move hides the copy of the cell it leaves
}


def _parse_time(value):
    if isinstance(value, str):
        return datetime.datetime.fromisoformat(value)
    return value


def to_dict(row):
    return {
        'uuid': row.uuid,
        'display_name': row.display_name,
        'project_id': row.project_id,
        'user_id': row.user_id,
        'host': row.host,
        'node': row.node,
        'compute_node_uuid': row.compute_node_uuid,
        'vm_state': row.vm_state,
        'task_state': row.task_state,
        'power_state': row.power_state,
        'flavor': row.flavor,
        'image_ref': row.image_ref,
        'availability_zone': row.availability_zone,
        'metadata': row.metadata_items or {},
        'accel_uuids': row.accel_uuids or [],
        'launched_at': row.launched_at.isoformat()
        if row.launched_at
        else None,
        'created_at': row.created_at.isoformat() if row.created_at else None,
        'deleted': row.deleted,
    }


# The build request's keys that only the compute API reads back; kept on
# the cell's instance as one JSON object (``server_attributes``).
SERVER_ATTRIBUTES = (
    'reservation_id',
    'launch_index',
    'key_name',
    'description',
    'hostname',
    'tags',
    'access_ip_v4',
    'access_ip_v6',
    'security_groups',
    'disk_config',
)


def create(session, values):
    row = _row(values)
    session.add(row)
    session.flush()
    return row


def create_many(session, values_list):
    """Create the instances of ``values_list`` (one INSERT per batch);
    their rows."""
    rows = [_row(values) for values in values_list]
    session.add_all(rows)
    session.flush()
    return rows


_INSTANCES = models.Instance.__table__
# Built once: the hand-off asks it for every instance it creates.
_EXISTING = sa.select(_INSTANCES.c.uuid).where(
    _INSTANCES.c.uuid.in_(sa.bindparam('uuids', expanding=True))
)


def existing(session, instance_uuids):
    """The uuids of ``instance_uuids`` that have a row here."""
    return set(
        session.execute(_EXISTING, {'uuids': list(instance_uuids)}).scalars()
    )


def _columns(values):
    """The columns a new instance's row gets from ``values``."""
    return dict(
        uuid=values['uuid'],
        display_name=values.get('display_name'),
        project_id=values['project_id'],
        user_id=values.get('user_id'),
        host=values.get('host'),
        node=values.get('node'),
        compute_node_uuid=values.get('compute_node_uuid'),
        vm_state=values.get('vm_state', states.BUILDING),
        task_state=values.get('task_state'),
        flavor=values['flavor'],
        image_ref=values.get('image_ref'),
        availability_zone=values.get('availability_zone'),
        metadata_items=values.get('metadata') or {},
        accel_uuids=values.get('accel_uuids') or [],
        instance_group_uuid=values.get('instance_group_uuid'),
        build_alternates=values.get('build_alternates'),
        server_attributes={
            key: values[key] for key in SERVER_ATTRIBUTES if key in values
        },
    )


def _row(values):
    return models.Instance(**_columns(values))


_INSERT = _INSTANCES.insert()


def insert(session, values):
    """Create one instance with a Core INSERT made once (no ORM object,
    no unit of work: the hand-off of every boot writes one); its
    :func:`to_dict`."""
    columns = _columns(values)
    columns.update(
        created_at=types.utcnow(), power_state=0, deleted=False, hidden=False
    )
    session.connection().execute(_INSERT, columns)
    return to_dict(SimpleNamespace(launched_at=None, **columns))


def get(session, instance_uuid):
    return session.execute(
        sa.select(models.Instance).where(models.Instance.uuid == instance_uuid)
    ).scalar()


def add_fault(
    session, instance_uuid, message, details=None, code=500, host=None
):
    session.add(
        models.InstanceFault(
            instance_uuid=instance_uuid,
            code=code,
            message=message[:255],
            details=details,
            host=host,
        )
    )


def _leaves_a_delete(updates):
    """Would ``updates`` take an instance whose delete has begun out of
    it without finishing it (another vm_state than deleted, or another
    task)?"""
    new_state = updates.get('vm_state')
    if new_state == states.DELETED:
        return False
    task = updates.get('task_state', states.DELETING)
    return new_state is not None or task != states.DELETING


def _task_in(task_states):
    named = [t for t in task_states if t is not None]
    clauses = []
    if named:
        clauses.append(models.Instance.task_state.in_(named))
    if None in task_states:
        clauses.append(models.Instance.task_state.is_(None))
    return sa.or_(*clauses) if clauses else sa.false()


def transition(
    session,
    instance_uuid,
    expected_vm_states,
    updates,
    expected_host=None,
    expected_task_states=None,
):
    """Compare-and-swap. Returns the updated row, or None when the instance
    is not in one of ``expected_vm_states`` (or does not exist), or, with
    ``expected_host``, is no longer on that host, or when a delete has
    begun (task_state ``deleting``) and the update would take the task
    from it without finishing the delete (a build's last swap, or its
    failure, arriving after the delete began: the user's delete wins).

    ``expected_task_states`` (a list, None among them for "no task"): the
    swap holds only while the instance's task is one of them (a server
    action takes its task only when none is under way; the compute ends
    only the task it was asked to do)."""
    built = swap_statement(
        instance_uuid,
        expected_vm_states,
        updates,
        expected_host,
        expected_task_states,
    )
    if built is None:
        return None
    query, updates, fault = built
    result = session.execute(query)
    if result.rowcount != 1:
        return None
    if fault:
        add_fault(
            session,
            instance_uuid,
            fault.get('message', 'Error'),
            fault.get('details'),
            fault.get('code', 500),
            updates.get('host'),
        )
    return get(session, instance_uuid)


def swap_statement(
    instance_uuid,
    expected_vm_states,
    updates,
    expected_host=None,
    expected_task_states=None,
):
    """The UPDATE of :func:`transition` (see there), with the values it
    sets and the fault it adds (or None): ``(statement, values, fault)``,
    or None when the transition table allows none of the expected states
    to go to the new one."""
    updates = dict(updates)
    fault = updates.pop('fault', None)
    unknown = set(updates) - _UPDATABLE
    if unknown:
        raise ValueError('cannot update %s' % ', '.join(sorted(unknown)))
    new_state = updates.get('vm_state')
    expected = list(expected_vm_states)
    if new_state is not None:
        expected = [s for s in expected if states.allowed(s, new_state)]
        if not expected:
            return None
    for key in ('launched_at', 'terminated_at'):
        if key in updates:
            updates[key] = _parse_time(updates[key])
    if updates.get('deleted'):
        updates.setdefault('deleted_at', types.utcnow())
    updates['updated_at'] = types.utcnow()
    query = sa.update(models.Instance).where(
        models.Instance.uuid == instance_uuid,
        models.Instance.vm_state.in_(expected),
        models.Instance.deleted.is_(False),
    )
    if expected_host is not None:
        query = query.where(models.Instance.host == expected_host)
    if expected_task_states is not None:
        query = query.where(_task_in(expected_task_states))
    if _leaves_a_delete(updates):
        query = query.where(
            sa.or_(
                models.Instance.task_state.is_(None),
                models.Instance.task_state != states.DELETING,
            )
        )
    return query.values(**updates), updates, fault


def update_attributes(session, instance_uuid, values):
    """What ``PUT /servers/{id}`` changes on a live instance:
    ``display_name`` (a column) and the server attributes (the others);
    False when the instance is gone."""
    row = queries.live(session, instance_uuid)
    if row is None:
        return False
    attributes = dict(row.server_attributes or {})
    for key, value in values.items():
        if key == 'display_name':
            row.display_name = value
        else:
            attributes[key] = value
    row.server_attributes = attributes
    return True


def _building_on(instance_uuid, host):
    """The conditions of a live instance still building on ``host``."""
    return (
        models.Instance.uuid == instance_uuid,
        models.Instance.vm_state == states.BUILDING,
        models.Instance.deleted.is_(False),
        models.Instance.host == host,
    )


def fail_build(session, instance_uuid, host, message, details):
    """Compare-and-swap a build on ``host`` to ERROR with a fault, and take
    the instance off the host. False when it is no longer building there
    (the compute finished it, a reschedule moved it, a delete took it)."""
    now = types.utcnow()
    result = session.execute(
        sa.update(models.Instance)
        .where(*_building_on(instance_uuid, host))
        .values(
            vm_state=states.ERROR,
            task_state=None,
            host=None,
            node=None,
            compute_node_uuid=None,
            updated_at=now,
        )
    )
    if result.rowcount != 1:
        return False
    add_fault(session, instance_uuid, message, details, 500, host)
    return True


def record_attempt(session, instance_uuid, host, node, result, reason=None):
    """Add one attempt; the same attempt as the instance's newest one (a
    ``record_build_attempt`` delivered twice) is not added again."""
    newest = session.execute(
        sa.select(
            models.BuildAttempt.host,
            models.BuildAttempt.node,
            models.BuildAttempt.result,
            models.BuildAttempt.reason,
        )
        .where(models.BuildAttempt.instance_uuid == instance_uuid)
        .order_by(models.BuildAttempt.id.desc())
        .limit(1)
    ).first()
    if newest is not None and tuple(newest) == (host, node, result, reason):
        return
    session.add(
        models.BuildAttempt(
            instance_uuid=instance_uuid,
            host=host,
            node=node,
            result=result,
            reason=reason,
        )
    )


def attempts(session, instance_uuid):
    rows = session.execute(
        sa.select(models.BuildAttempt)
        .where(models.BuildAttempt.instance_uuid == instance_uuid)
        .order_by(models.BuildAttempt.id)
    ).scalars()
    return [
        {
            'host': r.host,
            'node': r.node,
            'result': r.result,
            'reason': r.reason,
        }
        for r in rows
    ]


def on_host(session, host):
    rows = session.execute(
        sa.select(models.Instance).where(
            models.Instance.host == host,
            models.Instance.deleted.is_(False),
            models.Instance.hidden.is_(False),
        )
    ).scalars()
    return [to_dict(r) for r in rows]


def group_members(session, group_uuid, exclude=None):
    """``[{uuid, host, vm_state, task_state}]`` of the live instances of
    the server group in this cell that have a host (``exclude``: an
    instance uuid left out, the one being checked)."""
    query = sa.select(
        models.Instance.uuid,
        models.Instance.host,
        models.Instance.vm_state,
        models.Instance.task_state,
    ).where(
        models.Instance.instance_group_uuid == group_uuid,
        models.Instance.deleted.is_(False),
        models.Instance.host.is_not(None),
        models.Instance.vm_state.in_((states.BUILDING,) + states.HOLDS_HOST),
    )
    if exclude:
        query = query.where(models.Instance.uuid != exclude)
    return [
        {
            'uuid': r.uuid,
            'host': r.host,
            'vm_state': r.vm_state,
            'task_state': r.task_state,
        }
        for r in session.execute(query.order_by(models.Instance.id))
    ]


def alternates(request_spec, host_list):
    """The ``build_alternates`` column of a build: the primitives of its
    RequestSpec (without the uuids of a whole multi-create: each instance
    would store them all) and of its untried Selections."""
    spec = request_spec.to_primitive()
    spec.pop('instance_uuids', None)
    return {
        'request_spec': spec,
        'host_list': selection_obj.list_to_primitive(host_list),
    }


def leave_host(session, instance_uuid, host):
    """For a reschedule the compute asked for: atomically take a build
    still on ``host`` off it (host None, stored alternates cleared, as
    :func:`take_alternates` does). True for the one caller that did; a
    second copy of the reschedule, or the build check, then finds it
    gone from ``host``."""
    result = session.execute(
        sa.update(models.Instance)
        .where(*_building_on(instance_uuid, host))
        .values(build_alternates=None, host=None, updated_at=types.utcnow())
    )
    return result.rowcount == 1


def take_alternates(session, instance_uuid, host):
    """For the build check: atomically take the stored request spec and
    untried alternates of a build still on ``host`` (cleared, so a second
    pass or conductor cannot take them too), as ``(RequestSpec,
    [Selection])``. None when it is no longer building there or has no
    alternate left.

    The build leaves ``host`` in the same update (its host is None until
    the reschedule puts it on an alternate): a compute that was only cut
    off and comes back now fails its ``BUILD -> ACTIVE`` on ``host``, and
    destroys its guest, instead of making ACTIVE a build whose allocation
    the build check is about to free."""
    row = session.execute(
        sa.select(models.Instance.build_alternates).where(
            *_building_on(instance_uuid, host)
        )
    ).first()
    stored = row.build_alternates if row is not None else None
    if not stored or not stored.get('host_list'):
        return None
    result = session.execute(
        sa.update(models.Instance)
        .where(
            models.Instance.uuid == instance_uuid,
            models.Instance.vm_state == states.BUILDING,
            models.Instance.host == host,
            models.Instance.build_alternates.is_not(None),
        )
        .values(build_alternates=None, host=None, updated_at=types.utcnow())
    )
    if result.rowcount != 1:
        return None
    return (
        spec_obj.RequestSpec.from_primitive(stored['request_spec']),
        selection_obj.list_from_primitive(stored['host_list']),
    )
