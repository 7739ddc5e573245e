"""The API database's ``scheduling_records`` table: the only module that
writes SQL on it. The scheduler writes one record per instance it placed
(``scheduled``) or could not place (``failed``) before it answers; the
super conductor reads them (which claims a lost answer hid, why an
instance did not fit) and adds the record of an instance a dry run
explained; admins read them (``GET /os-scheduler/records``)."""

import sqlalchemy as sa

from nimbus.db.api import models

Record = models.SchedulingRecord


def add(session, request_id, instance_uuids, outcome, detail):
    """One record per instance uuid (one without an instance when the
    list is empty)."""
    for uuid in instance_uuids or [None]:
        session.add(
            Record(
                request_id=request_id,
                instance_uuid=uuid,
                outcome=outcome,
                detail=detail,
            )
        )


def of_request(session, request_id, instance_uuids, outcome, column):
    """``[(record id, instance uuid, column value)]`` of the records with
    ``outcome`` for these instances of ``request_id``, oldest first."""
    return session.execute(
        sa.select(Record.id, Record.instance_uuid, getattr(Record, column))
        .where(
            Record.request_id == request_id,
            Record.outcome == outcome,
            Record.instance_uuid.in_(list(instance_uuids)),
        )
        .order_by(Record.id)
    ).all()


def where(session, **equal):
    """The records whose columns equal ``equal``'s values, oldest first."""
    query = sa.select(Record).order_by(Record.id)
    for key, value in equal.items():
        query = query.where(getattr(Record, key) == value)
    return list(session.execute(query).scalars())
