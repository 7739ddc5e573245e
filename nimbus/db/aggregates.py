"""The API database's ``aggregates``, ``aggregate_hosts`` and
``aggregate_metadata`` tables: the only module that writes SQL on them.
The compute API keeps aggregates (:mod:`nimbus.api.objects.aggregates`,
which also checks their metadata) and removes a deleted compute's host
from them; the scheduler's reload and the availability zones read them."""

import sqlalchemy as sa
from oslo_utils import uuidutils

from nimbus.db.api import models

Aggregate = models.Aggregate
Host = models.AggregateHost
Metadata = models.AggregateMetadata


def get(session, aggregate_id):
    """The aggregate's row, or None."""
    return session.get(Aggregate, aggregate_id)


def listing(session):
    """Every aggregate row, oldest first."""
    return list(
        session.execute(sa.select(Aggregate).order_by(Aggregate.id)).scalars()
    )


def name_taken(session, name):
    return (
        session.execute(
            sa.select(Aggregate.id).where(Aggregate.name == name)
        ).first()
        is not None
    )


def add(session, name, metadata=None):
    """A new aggregate row named ``name`` with ``metadata``."""
    row = Aggregate(uuid=uuidutils.generate_uuid(), name=name)
    for key, value in (metadata or {}).items():
        row.metadata_items.append(Metadata(key=key, value=value))
    session.add(row)
    session.flush()
    return row


def add_host(row, host):
    row.hosts.append(Host(host=host))


def set_metadata(row, metadata):
    """Set ``metadata`` on an aggregate row (a None value removes the
    key)."""
    existing = {m.key: m for m in row.metadata_items}
    for key, value in metadata.items():
        if value is None:
            if key in existing:
                row.metadata_items.remove(existing[key])
        elif key in existing:
            existing[key].value = value
        else:
            row.metadata_items.append(Metadata(key=key, value=value))


def remove_host_everywhere(session, host):
    """``host`` leaves every aggregate (its compute service was deleted)."""
    session.execute(sa.delete(Host).where(Host.host == host))


_HOSTS = Host.__table__
_METADATA = Metadata.__table__
# Built once: a boot's zone lookup runs it (Core, on the tables).
_METADATA_OF_HOSTS = (
    sa.select(_HOSTS.c.host, _METADATA.c.value)
    .join(_HOSTS, _HOSTS.c.aggregate_id == _METADATA.c.aggregate_id)
    .where(
        _HOSTS.c.host.in_(sa.bindparam('hosts', expanding=True)),
        _METADATA.c.key == sa.bindparam('key'),
    )
)


def metadata_of_hosts(session, hosts, key):
    """``{host: set of values}`` of ``key`` in the metadata of each of
    ``hosts``' aggregates (hosts in none left out; one query)."""
    out = {}
    rows = session.execute(
        _METADATA_OF_HOSTS, {'hosts': sorted(hosts), 'key': key}
    ).all()
    for host, value in rows:
        out.setdefault(host, set()).add(value)
    return out


def metadata_of_host(session, host, key):
    """The values of ``key`` in the metadata of ``host``'s aggregates."""
    return set(
        session.execute(
            sa.select(Metadata.value)
            .join(Host, Host.aggregate_id == Metadata.aggregate_id)
            .where(Host.host == host, Metadata.key == key)
        ).scalars()
    )
