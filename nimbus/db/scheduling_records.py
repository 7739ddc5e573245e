"""The API database's ``scheduling_records`` table: the only module that
writes SQL on it. The scheduler writes one record per instance it placed
(``scheduled``) or could not place (``failed``) before it answers; the
super conductor reads them (which claims a lost answer hid, why an
instance did not fit) and adds the record of an instance a dry run
explained; admins read them (``GET /os-scheduler/records``)."""

import sqlalchemy as sa

from nimbus.db.api import models

Record = models.SchedulingRecord


def _own(detail, uuid, many):
    """``detail`` with its ``instances`` list (one entry per instance of
    the request) narrowed to ``uuid``'s entry when the record is one of
    ``many``: each of N records carrying all N entries made a 1000-instance
    multi-create write about 100 MB (MariaDB refuses a packet over 16)."""
    if not many or not isinstance(detail, dict):
        return detail
    entries = detail.get('instances')
    if not isinstance(entries, list):
        return detail
    return dict(
        detail,
        instances=[
            e
            for e in entries
            if isinstance(e, dict) and e.get('instance_uuid') == uuid
        ],
    )


def add(session, request_id, instance_uuids, outcome, detail):
    """One record per instance uuid (one without an instance when the
    list is empty); a detail listing ``instances`` keeps each record's
    own entry."""
    session.add_all(
        [
            Record(**row)
            for row in _rows(request_id, instance_uuids, outcome, detail)
        ]
    )


# Built once: the scheduler writes one record set per boot, and an ORM
# session (unit of work, identity map, flush) cost about as much Python
# again as the INSERT itself. Column defaults (``created_at``) and the
# JSON type's bind processing apply to a Core INSERT as to the ORM's.
_INSERT = sa.insert(Record.__table__)


def _rows(request_id, instance_uuids, outcome, detail):
    uuids = list(instance_uuids or [None])
    many = len(uuids) > 1
    return [
        {
            'request_id': request_id,
            'instance_uuid': uuid,
            'outcome': outcome,
            'detail': _own(detail, uuid, many),
        }
        for uuid in uuids
    ]


def insert(connection, request_id, instance_uuids, outcome, detail):
    """:func:`add`'s rows written by one Core INSERT on ``connection`` (a
    SQLAlchemy ``Connection`` in a transaction, e.g. ``engine.begin()``):
    the same rows, without an ORM session."""
    connection.execute(
        _INSERT, _rows(request_id, instance_uuids, outcome, detail)
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


def of_instances(session, instance_uuids):
    """The records of these instances, oldest first."""
    return list(
        session.execute(
            sa.select(Record)
            .where(Record.instance_uuid.in_(list(instance_uuids)))
            .order_by(Record.id)
        ).scalars()
    )
