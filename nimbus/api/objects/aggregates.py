"""Host aggregates (with hosts and metadata) in the API database."""

import sqlalchemy as sa
from oslo_utils import uuidutils

from nimbus.common.db import types as db_types
from nimbus.db.api import models

AZ_KEY = 'availability_zone'


class AggregateNotFound(Exception):
    pass


class AggregateExists(Exception):
    pass


def to_dict(row):
    metadata = {m.key: m.value for m in row.metadata_items}
    return {'id': row.id, 'uuid': row.uuid, 'name': row.name,
            'availability_zone': metadata.get(AZ_KEY),
            'hosts': sorted(h.host for h in row.hosts),
            'metadata': metadata, 'created_at': row.created_at,
            'updated_at': row.updated_at}


def _row(session, aggregate_id):
    row = session.get(models.Aggregate, aggregate_id)
    if row is None:
        raise AggregateNotFound(aggregate_id)
    return row


def get(db, aggregate_id):
    with db.session() as session:
        return to_dict(_row(session, aggregate_id))


def list_all(db):
    with db.session() as session:
        return [to_dict(r) for r in session.execute(
            sa.select(models.Aggregate).order_by(models.Aggregate.id))
            .scalars()]


def zones_by_host(db):
    """``{host: set(zone names)}`` from aggregate metadata."""
    zones = {}
    for agg in list_all(db):
        if agg['availability_zone']:
            for host in agg['hosts']:
                zones.setdefault(host, set()).add(agg['availability_zone'])
    return zones


def zone_names(db):
    return {a['availability_zone'] for a in list_all(db)
            if a['availability_zone']}


def create(db, name, availability_zone=None):
    with db.session() as session:
        if session.execute(sa.select(models.Aggregate).where(
                models.Aggregate.name == name)).scalar() is not None:
            raise AggregateExists(name)
        row = models.Aggregate(uuid=uuidutils.generate_uuid(), name=name)
        if availability_zone:
            row.metadata_items.append(models.AggregateMetadata(
                key=AZ_KEY, value=availability_zone))
        session.add(row)
        session.flush()
        return to_dict(row)


def update(db, aggregate_id, name=None, availability_zone=None,
           set_zone=False):
    with db.session() as session:
        row = _row(session, aggregate_id)
        if name is not None and name != row.name:
            if session.execute(sa.select(models.Aggregate).where(
                    models.Aggregate.name == name)).scalar() is not None:
                raise AggregateExists(name)
            row.name = name
        if set_zone:
            _set_metadata(row, {AZ_KEY: availability_zone})
        row.updated_at = db_types.utcnow()
        session.flush()
        return to_dict(row)


def delete(db, aggregate_id):
    with db.session() as session:
        session.delete(_row(session, aggregate_id))


def add_host(db, aggregate_id, host):
    with db.session() as session:
        row = _row(session, aggregate_id)
        row.hosts.append(models.AggregateHost(host=host))
        session.flush()
        return to_dict(row)


def remove_host(db, aggregate_id, host):
    with db.session() as session:
        row = _row(session, aggregate_id)
        for item in list(row.hosts):
            if item.host == host:
                row.hosts.remove(item)
        session.flush()
        return to_dict(row)


def _set_metadata(row, metadata):
    existing = {m.key: m for m in row.metadata_items}
    for key, value in metadata.items():
        if value is None:
            if key in existing:
                row.metadata_items.remove(existing[key])
        elif key in existing:
            existing[key].value = value
        else:
            row.metadata_items.append(models.AggregateMetadata(
                key=key, value=value))


def set_metadata(db, aggregate_id, metadata):
    with db.session() as session:
        row = _row(session, aggregate_id)
        _set_metadata(row, metadata)
        row.updated_at = db_types.utcnow()
        session.flush()
        return to_dict(row)
