"""Accelerator requests (ARQs): one device asked for by one group of a
device profile, bound to a host, a device provider and an instance.

Every state change goes through :func:`transition`, a compare-and-swap
``UPDATE ... WHERE uuid = :uuid AND state = :expected`` checked against
:mod:`nimbus.accelerator.states`. The ``accelerator-request-bound`` event
of a bind is written with the state it reports (``event_*`` columns), so
the binder sends it only after that commit and resends it after a restart.
"""

import sqlalchemy as sa
from oslo_utils import uuidutils

from nimbus.accelerator import states
from nimbus.accelerator.db import models as m
from nimbus.accelerator.objects import base
from nimbus.accelerator.objects import device as device_obj

_ARQ = m.AcceleratorRequest.__table__


class NotFound(LookupError):
    pass


class UnknownProvider(LookupError):
    """A bind names a ``device_rp_uuid`` no deployable has."""


class InstanceHasArqs(ValueError):
    """A bind names an instance other ARQs are already bound to on the
    same host."""


def _row(row):
    return dict(row._mapping)


def devices_asked(group):
    """How many devices (ARQs) one profile group asks for: the sum of its
    ``resources:<RC>`` amounts."""
    return sum(
        int(str(value))
        for key, value in group.items()
        if key.startswith('resources:')
    )


def create_for_profile(adb, profile, project_id=None):
    """New ``Initial`` ARQs for ``profile`` (a dict with name, groups): one
    per device each group asks for, ``device_profile_group_id`` = the
    group's index. Returned in creation order."""
    now = base.utcnow()
    rows = []
    for index, group in enumerate(profile['groups']):
        for _ in range(devices_asked(group)):
            rows.append(
                {
                    'uuid': uuidutils.generate_uuid(),
                    'state': states.INITIAL,
                    'project_id': project_id,
                    'device_profile_name': profile['name'],
                    'device_profile_group_id': index,
                    'device_profile_group': group,
                    'event_pending': False,
                    'event_attempts': 0,
                    'created_at': now,
                }
            )

    def insert(conn):
        if rows:
            conn.execute(_ARQ.insert(), rows)

    adb.write(insert)
    uuids = [r['uuid'] for r in rows]
    return [get(adb, uuid) for uuid in uuids]


def get(adb, uuid):
    row = adb.read(lambda conn: _get(conn, uuid))
    if row is None:
        raise NotFound(uuid)
    return _row(row)


def _get(conn, uuid):
    return conn.execute(sa.select(_ARQ).where(_ARQ.c.uuid == uuid)).first()


def list_arqs(adb, instance_uuid=None, project_id=None):
    query = base.listing(
        _ARQ, instance_uuid=instance_uuid, project_id=project_id
    )
    return adb.rows(query)


def transition(conn, uuid, expected, new, **values):
    """Compare-and-swap ``expected`` -> ``new`` (with other column
    ``values``); True when this call made the change, False when the ARQ
    is gone or no longer in ``expected``. A change the state table refuses
    raises :class:`~nimbus.accelerator.states.InvalidTransition`."""
    states.check(expected, new)
    values.update(state=new, updated_at=base.utcnow())
    result = conn.execute(
        _ARQ.update()
        .where(_ARQ.c.uuid == uuid, _ARQ.c.state == expected)
        .values(**values)
    )
    return result.rowcount == 1


_BINDING_CLEARED = dict(
    hostname=None,
    device_rp_uuid=None,
    instance_uuid=None,
    attach_handle_uuid=None,
    attach_handle_type=None,
    attach_handle_info=None,
    failure_reason=None,
    event_status=None,
    event_pending=False,
    event_attempts=0,
    event_next_at=None,
)


def start_binds(adb, bindings):
    """Record the intent of binding each ARQ (``{uuid: {'hostname',
    'device_rp_uuid', 'instance_uuid'[, 'project_id']}}``): all move to
    BindStarted in one transaction, or none (NotFound, InvalidTransition).
    """

    def run(conn):
        for uuid, binding in bindings.items():
            row = _get(conn, uuid)
            if row is None:
                raise NotFound(uuid)
            if not device_obj.provider_known(conn, binding['device_rp_uuid']):
                raise UnknownProvider(binding['device_rp_uuid'])
            # As Cyborg, no ARQ is added to an instance that has some on
            # the same host; beyond Cyborg, ARQs bound on another host are
            # a move's source (kept until the move is confirmed).
            others = conn.execute(
                sa.select(_ARQ.c.uuid).where(
                    _ARQ.c.instance_uuid == binding['instance_uuid'],
                    _ARQ.c.uuid.not_in(list(bindings)),
                    sa.or_(
                        _ARQ.c.hostname.is_(None),
                        _ARQ.c.hostname == binding['hostname'],
                    ),
                )
            ).first()
            if others is not None:
                raise InstanceHasArqs(binding['instance_uuid'])
            values = dict(_BINDING_CLEARED)
            values.update(binding)
            if not transition(
                conn, uuid, row.state, states.BIND_STARTED, **values
            ):
                raise states.InvalidTransition(row.state, states.BIND_STARTED)

    adb.write(run)


def _release(conn, row):
    """Free the ARQ's attach handle; what the agent must release, or
    None."""
    handles = device_obj.release_handles(conn, row.uuid)
    if not handles or not row.hostname:
        return None
    return {
        'host': row.hostname,
        'arq': {
            'uuid': row.uuid,
            'instance_uuid': row.instance_uuid,
            'device_rp_uuid': row.device_rp_uuid,
            'attach_handle': handles[0],
        },
    }


def unbind(adb, uuids):
    """Unbind the ARQs (state Unbound, binding and pending event cleared,
    attach handle freed). Already unbound or never bound ones are left as
    they are. Returns the releases the agents must do."""

    def run(conn):
        releases = []
        for uuid in uuids:
            row = _get(conn, uuid)
            if row is None:
                raise NotFound(uuid)
            if row.state in (states.INITIAL, states.UNBOUND):
                continue
            release = _release(conn, row)
            if not transition(
                conn, uuid, row.state, states.UNBOUND, **_BINDING_CLEARED
            ):
                raise states.InvalidTransition(row.state, states.UNBOUND)
            if release:
                releases.append(release)
        return releases

    return adb.write(run)


def delete(adb, uuids=None, instance_uuid=None, check=None):
    """Delete ARQs by uuid and/or by instance (missing uuids ignored):
    each moves to Deleting (compare-and-swap), its handle is freed and its
    row removed. ``check(arqs)``, given the ARQs found (dicts) in the same
    transaction before anything changes, may raise to delete nothing (the
    API refuses unknown and bound ARQs there, so a bind cannot slip in
    between its check and the delete). Returns ``(deleted uuids, releases
    for the agents)``."""

    def run(conn):
        query = sa.select(_ARQ)
        if uuids is not None:
            query = query.where(_ARQ.c.uuid.in_(list(uuids)))
        if instance_uuid is not None:
            query = query.where(_ARQ.c.instance_uuid == instance_uuid)
        rows = conn.execute(query).fetchall()
        if check is not None:
            check([_row(row) for row in rows])
        deleted, releases = [], []
        for row in rows:
            if row.state == states.DELETING or not transition(
                conn, row.uuid, row.state, states.DELETING
            ):
                continue
            release = _release(conn, row)
            if release:
                releases.append(release)
            conn.execute(
                _ARQ.delete().where(
                    _ARQ.c.uuid == row.uuid, _ARQ.c.state == states.DELETING
                )
            )
            deleted.append(row.uuid)
        return deleted, releases

    return adb.write(run)


# --- the binder's side -----------------------------------------------------


def pending_binds(adb, limit=50):
    """ARQs in BindStarted, oldest first (including those a restart left)."""
    query = (
        sa.select(_ARQ)
        .where(_ARQ.c.state == states.BIND_STARTED)
        .order_by(_ARQ.c.updated_at, _ARQ.c.id)
        .limit(limit)
    )
    return adb.rows(query)


def claim_handle(adb, arq):
    """The attach handle this binding uses: the one it already holds (a
    bind resumed after a restart) or a free one of the deployable whose
    provider is ``device_rp_uuid``, claimed in the same transaction that
    checks the ARQ is still BindStarted for the same binding. Returns the
    handle dict, or None with no free handle; raises NotFound when the ARQ
    was unbound or deleted meanwhile."""

    def run(conn):
        row = _get(conn, arq['uuid'])
        if (
            row is None
            or row.state != states.BIND_STARTED
            or row.device_rp_uuid != arq['device_rp_uuid']
        ):
            raise NotFound(arq['uuid'])
        return device_obj.claim_handle(conn, row.device_rp_uuid, row.uuid)

    return adb.write(run)


def finish_bind(adb, arq, handle, reason=None):
    """BindStarted -> Bound (``handle`` given, ``reason`` None) or
    BindFailed (handle freed), with the event to send recorded in the
    same commit. False when the ARQ left BindStarted meanwhile (the caller
    must then undo what it programmed)."""
    now = base.utcnow()
    event = dict(event_pending=True, event_attempts=0, event_next_at=now)

    def run(conn):
        row = _get(conn, arq['uuid'])
        if (
            row is None
            or row.device_rp_uuid != arq['device_rp_uuid']
            or row.instance_uuid != arq['instance_uuid']
        ):
            return False
        if reason is None:
            return transition(
                conn,
                arq['uuid'],
                states.BIND_STARTED,
                states.BOUND,
                attach_handle_uuid=handle['uuid'],
                attach_handle_type=handle['attach_type'],
                attach_handle_info=handle['attach_info'],
                failure_reason=None,
                event_status='completed',
                **event,
            )
        device_obj.release_handles(conn, arq['uuid'])
        return transition(
            conn,
            arq['uuid'],
            states.BIND_STARTED,
            states.BIND_FAILED,
            failure_reason=reason[:1000],
            event_status='failed',
            **event,
        )

    return adb.write(run)


def due_events(adb, now=None, limit=50):
    """ARQs whose event is pending and due by ``now``."""
    now = now or base.utcnow()
    query = (
        sa.select(_ARQ)
        .where(
            _ARQ.c.event_pending.is_(True),
            sa.or_(
                _ARQ.c.event_next_at.is_(None), _ARQ.c.event_next_at <= now
            ),
        )
        .order_by(_ARQ.c.event_next_at, _ARQ.c.id)
        .limit(limit)
    )
    return adb.rows(query)


def pending_events(adb):
    """Every ARQ whose event is still to be delivered (due or not)."""
    query = (
        sa.select(_ARQ)
        .where(_ARQ.c.event_pending.is_(True))
        .order_by(_ARQ.c.id)
    )
    return adb.rows(query)


def _pending_event_update(adb, arq, **values):
    """Update the ARQ's row while it is still in the state its event
    announced and that event is still pending."""
    adb.write(
        lambda conn: conn.execute(
            _ARQ.update()
            .where(
                _ARQ.c.uuid == arq['uuid'],
                _ARQ.c.state == arq['state'],
                _ARQ.c.event_pending.is_(True),
            )
            .values(**values)
        )
    )


def event_delivered(adb, arq):
    """The event of this binding was accepted: nothing more to send."""
    _pending_event_update(adb, arq, event_pending=False)


def event_retry_at(adb, arq, next_at):
    """Not delivered yet: one more attempt counted, the next one due at
    ``next_at``."""
    _pending_event_update(
        adb,
        arq,
        event_attempts=_ARQ.c.event_attempts + 1,
        event_next_at=next_at,
    )


def count_for_profile(conn, name):
    return conn.execute(
        sa.select(sa.func.count())
        .select_from(_ARQ)
        .where(_ARQ.c.device_profile_name == name)
    ).scalar()
