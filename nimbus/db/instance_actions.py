"""A cell's ``instance_actions`` and ``instance_actions_events`` tables:
the only module that writes SQL on them (os-instance-actions).

An action is one user request on an instance (``stop``, ``reboot``, ...),
keyed by the instance and the request id; the compute API starts it. Each
step a service takes for it is an event (``compute_stop_instance``): the
compute starts and finishes its events through the cell conductor
(:class:`nimbus.common.objects.action_event.ActionEvent`), and an event
finished with an error marks its action's ``message`` ``Error``, as Nova
does.
"""

import datetime

import sqlalchemy as sa

from nimbus.common.db import row_copy
from nimbus.common.db import types
from nimbus.db.cell import models

Action = models.InstanceAction
Event = models.InstanceActionEvent

SUCCESS = 'Success'
ERROR = 'Error'


def _time(value):
    if isinstance(value, str):
        return datetime.datetime.fromisoformat(value.rstrip('Z'))
    return value


def start(session, instance_uuid, action, request_id, user_id, project_id):
    """Record the start of ``action`` on the instance for ``request_id``;
    the row. A second start of the same request (a retried request) gives
    the first row back."""
    row = _get(session, instance_uuid, request_id)
    if row is not None:
        return row
    now = types.utcnow()
    row = Action(
        action=action,
        instance_uuid=instance_uuid,
        request_id=request_id,
        user_id=user_id,
        project_id=project_id,
        start_time=now,
        updated_at=now,
    )
    session.add(row)
    session.flush()
    return row


_ACTIONS = Action.__table__
# Built once: every instance the super conductor creates runs it.
_CREATED = sa.select(_ACTIONS.c.instance_uuid).where(
    _ACTIONS.c.instance_uuid.in_(sa.bindparam('uuids', expanding=True)),
    _ACTIONS.c.action == 'create',
)
_INSERT_ACTION = sa.insert(_ACTIONS)


def start_created(session, instances, request_id):
    """Record the ``create`` action of newly created instances (dicts
    with ``uuid``, ``user_id``, ``project_id``) for ``request_id``, the
    request that asked for them; the instances that have it already (a
    retried create) are skipped."""
    uuids = [i['uuid'] for i in instances]
    if not uuids:
        return
    have = set(session.execute(_CREATED, {'uuids': uuids}).scalars())
    now = types.utcnow()
    rows = [
        {
            'action': 'create',
            'instance_uuid': i['uuid'],
            'request_id': request_id,
            'user_id': i.get('user_id'),
            'project_id': i.get('project_id'),
            'start_time': now,
            'updated_at': now,
        }
        for i in instances
        if i['uuid'] not in have
    ]
    if rows:
        # Inserted here, in one statement (no ORM object to flush).
        session.execute(_INSERT_ACTION, rows)


def finish(session, instance_uuid, request_id, message=None):
    """Mark the action ended (``message``: ``Error`` when it failed);
    False when there is no such action."""
    row = _get(session, instance_uuid, request_id)
    if row is None:
        return False
    now = types.utcnow()
    row.finish_time = now
    row.updated_at = now
    if message is not None:
        row.message = message[:255]
    return True


def _get(session, instance_uuid, request_id):
    return session.execute(
        sa.select(Action)
        .where(
            Action.instance_uuid == instance_uuid,
            Action.request_id == request_id,
        )
        .order_by(Action.id.desc())
        .limit(1)
    ).scalar()


def event_start(session, instance_uuid, request_id, event, host, when=None):
    """Start ``event`` of the request's action on ``host``; False when the
    action is unknown. A start delivered twice keeps one open event."""
    action = _get(session, instance_uuid, request_id)
    if action is None:
        return False
    open_event = _open_event(session, action.id, event)
    if open_event is None:
        session.add(
            Event(
                action_id=action.id,
                event=event,
                start_time=_time(when) or types.utcnow(),
                host=host,
            )
        )
    action.updated_at = types.utcnow()
    return True


def event_finish(
    session,
    instance_uuid,
    request_id,
    event,
    host,
    result,
    traceback=None,
    details=None,
    when=None,
):
    """Finish ``event`` with ``result`` (``Success`` or ``Error``); an
    event never started is recorded started and finished now, a finish
    delivered twice (same time and result) is recorded once. An error
    marks the action's message ``Error``. False when the action is
    unknown."""
    action = _get(session, instance_uuid, request_id)
    if action is None:
        return False
    now = _time(when) or types.utcnow()
    row = _open_event(session, action.id, event)
    if row is None and _finished_at(session, action.id, event, now, result):
        return True  # this finish, delivered again
    if row is None:
        row = Event(
            action_id=action.id, event=event, start_time=now, host=host
        )
        session.add(row)
    row.finish_time = now
    row.result = result
    row.traceback = traceback
    row.details = details
    action.updated_at = types.utcnow()
    if result == ERROR:
        action.message = ERROR
    return True


def _finished_at(session, action_id, event, when, result):
    return (
        session.execute(
            sa.select(Event.id).where(
                Event.action_id == action_id,
                Event.event == event,
                Event.finish_time == when,
                Event.result == result,
            )
        ).first()
        is not None
    )


def _open_event(session, action_id, event):
    return session.execute(
        sa.select(Event)
        .where(
            Event.action_id == action_id,
            Event.event == event,
            Event.finish_time.is_(None),
        )
        .order_by(Event.id.desc())
        .limit(1)
    ).scalar()


def _action_dict(row):
    return {
        'action': row.action,
        'instance_uuid': row.instance_uuid,
        'request_id': row.request_id,
        'user_id': row.user_id,
        'project_id': row.project_id,
        'start_time': row.start_time,
        'finish_time': row.finish_time,
        'message': row.message,
        'updated_at': row.updated_at,
    }


def list_for(session, instance_uuid, since=None, before=None):
    """The instance's actions, newest first (dicts); ``since``/``before``
    bound their ``updated_at`` (2.58)."""
    query = sa.select(Action).where(Action.instance_uuid == instance_uuid)
    if since is not None:
        query = query.where(Action.updated_at >= since)
    if before is not None:
        query = query.where(Action.updated_at <= before)
    rows = session.execute(
        query.order_by(Action.start_time.desc(), Action.id.desc())
    ).scalars()
    return [_action_dict(r) for r in rows]


def get(session, instance_uuid, request_id):
    """The action with its events (oldest first), or None."""
    row = _get(session, instance_uuid, request_id)
    if row is None:
        return None
    out = _action_dict(row)
    events = session.execute(
        sa.select(Event).where(Event.action_id == row.id).order_by(Event.id)
    ).scalars()
    out['events'] = [
        {
            'event': e.event,
            'start_time': e.start_time,
            'finish_time': e.finish_time,
            'result': e.result,
            'traceback': e.traceback,
            'host': e.host,
            'details': e.details,
        }
        for e in events
    ]
    return out


def copy_missing(source, target, instance_uuid):
    """Carry the instance's actions and events of the ``source`` session's
    cell into the ``target`` session's cell (a cross-cell move): an action
    the target lacks (by request id) is copied with its events, an action
    it has gets the events it lacks (by name and start time). Rows are
    copied by their tables' columns
    (:func:`nimbus.common.db.row_copy.copy_row`), a new one included."""
    actions = source.execute(
        sa.select(Action)
        .where(Action.instance_uuid == instance_uuid)
        .order_by(Action.id)
    ).scalars()
    for action in actions:
        mine = _get(target, instance_uuid, action.request_id)
        if mine is None:
            mine = row_copy.copy_row(action)
            target.add(mine)
            target.flush()
        elif action.message and not mine.message:
            mine.message = action.message
        have = {
            (e.event, e.start_time)
            for e in target.execute(
                sa.select(Event).where(Event.action_id == mine.id)
            ).scalars()
        }
        events = source.execute(
            sa.select(Event)
            .where(Event.action_id == action.id)
            .order_by(Event.id)
        ).scalars()
        target.add_all(
            row_copy.copy_row(e, action_id=mine.id)
            for e in events
            if (e.event, e.start_time) not in have
        )
    target.flush()


def purge(session, instance_uuid):
    """Delete the instance's actions and events from this cell (the copy
    a cross-cell move leaves behind)."""
    ids = list(
        session.execute(
            sa.select(Action.id).where(Action.instance_uuid == instance_uuid)
        ).scalars()
    )
    if ids:
        session.execute(sa.delete(Event).where(Event.action_id.in_(ids)))
        session.execute(sa.delete(Action).where(Action.id.in_(ids)))
