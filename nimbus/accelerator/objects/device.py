"""Devices, their deployables and attach handles: what the agents report.

:func:`report` replaces one host's set idempotently. Attach handles are
claimed and freed here too (:func:`claim_handle`, :func:`release_handles`),
inside the transaction of the ARQ change that needs them.
"""

import sqlalchemy as sa
from oslo_log import log as logging

from nimbus.accelerator.db import models as m
from nimbus.accelerator.objects import attribute
from nimbus.accelerator.objects import base

LOG = logging.getLogger(__name__)

_DEV = m.Device.__table__
_DEP = m.Deployable.__table__
_AH = m.AttachHandle.__table__

DEVICE_FIELDS = (
    'type',
    'vendor',
    'model',
    'std_board_info',
    'vendor_board_info',
    'driver_name',
)
DEPLOYABLE_FIELDS = ('name', 'num_accelerators', 'rp_uuid', 'driver_name')
HANDLE_FIELDS = ('attach_type', 'attach_info')


class NotFound(LookupError):
    pass


def _handle(row):
    return {
        'uuid': row.uuid,
        'attach_type': row.attach_type,
        'attach_info': row.attach_info,
    }


# --- reads -----------------------------------------------------------------


def list_devices(adb, filters=None):
    query = sa.select(_DEV).order_by(_DEV.c.id)
    for key, value in (filters or {}).items():
        query = query.where(_DEV.c[key] == value)
    return adb.rows(query)


def get_device(adb, uuid):
    query = sa.select(_DEV).where(_DEV.c.uuid == uuid)
    return dict(adb.first(query, NotFound, uuid)._mapping)


def _deployable_query():
    return (
        sa.select(_DEP, _DEV.c.uuid.label('device_uuid'), _DEV.c.hostname)
        .join(_DEV, _DEV.c.id == _DEP.c.device_id)
        .order_by(_DEP.c.id)
    )


def list_deployables(adb, filters=None):
    query = _deployable_query()
    for key, value in (filters or {}).items():
        query = query.where(_DEP.c[key] == value)
    return adb.rows(query)


def get_deployable(adb, uuid):
    query = _deployable_query().where(_DEP.c.uuid == uuid)
    return dict(adb.first(query, NotFound, uuid)._mapping)


def provider_known(conn, rp_uuid):
    """Whether a deployable has resource provider ``rp_uuid`` (in the
    caller's transaction)."""
    return (
        conn.execute(
            sa.select(_DEP.c.id).where(_DEP.c.rp_uuid == rp_uuid)
        ).first()
        is not None
    )


def handles_of_host(adb, host):
    """Every attach handle of ``host``'s devices (uuid -> dict with
    in_use and arq_uuid)."""
    query = (
        sa.select(_AH)
        .join(_DEP, _DEP.c.id == _AH.c.deployable_id)
        .join(_DEV, _DEV.c.id == _DEP.c.device_id)
        .where(_DEV.c.hostname == host)
    )
    return adb.read(
        lambda conn: {r.uuid: dict(r._mapping) for r in conn.execute(query)}
    )


# --- attach handles, inside an ARQ transaction -----------------------------


def claim_handle(conn, rp_uuid, arq_uuid):
    """The handle ``arq_uuid`` already holds, or a free one of the
    deployable whose provider is ``rp_uuid`` marked in use by it
    (compare-and-swap on ``in_use``); None when none is free."""
    held = conn.execute(
        sa.select(_AH).where(_AH.c.arq_uuid == arq_uuid)
    ).first()
    if held is not None:
        return _handle(held)
    free = conn.execute(
        sa.select(_AH)
        .join(_DEP, _DEP.c.id == _AH.c.deployable_id)
        .where(_DEP.c.rp_uuid == rp_uuid, _AH.c.in_use.is_(False))
        .order_by(_AH.c.id)
    ).fetchall()
    for row in free:
        taken = conn.execute(
            _AH.update()
            .where(_AH.c.id == row.id, _AH.c.in_use.is_(False))
            .values(in_use=True, arq_uuid=arq_uuid, updated_at=base.utcnow())
        )
        if taken.rowcount == 1:
            return _handle(row)
    return None


def release_handles(conn, arq_uuid):
    """Free the handles ``arq_uuid`` holds; returns them."""
    rows = conn.execute(
        sa.select(_AH).where(_AH.c.arq_uuid == arq_uuid)
    ).fetchall()
    if rows:
        conn.execute(
            _AH.update()
            .where(_AH.c.arq_uuid == arq_uuid)
            .values(in_use=False, arq_uuid=None, updated_at=base.utcnow())
        )
    return [_handle(r) for r in rows]


# --- the agents' report ----------------------------------------------------


# Built once: a statement built per row (``insert().values(...)``, a
# ``where`` on a literal) cost SQLAlchemy more than the database, a
# thousand hosts' first reports being six rows each.
_INSERT = {t.name: t.insert() for t in (_DEV, _DEP, _AH)}
_BY_UUID = {
    t.name: sa.select(t).where(t.c.uuid == sa.bindparam('b_uuid'))
    for t in (_DEV, _DEP, _AH)
}


def _upsert(conn, table, uuid, values, now, fresh=False):
    """The id of the row ``uuid`` of ``table``, inserted or updated to
    ``values``; ``fresh``: the host has no row yet, nothing to read."""
    row = (
        None
        if fresh
        else conn.execute(_BY_UUID[table.name], {'b_uuid': uuid}).first()
    )
    if row is None:
        # The new row's id from the INSERT itself, not read back.
        return conn.execute(
            _INSERT[table.name], dict(values, uuid=uuid, created_at=now)
        ).inserted_primary_key[0]
    if any(getattr(row, k) != v for k, v in values.items()):
        conn.execute(
            table.update()
            .where(table.c.id == row.id)
            .values(updated_at=now, **values)
        )
    return row.id


def _handles_in_use(conn, deployable_ids):
    if not deployable_ids:
        return set()
    return {
        r.deployable_id
        for r in conn.execute(
            sa.select(_AH.c.deployable_id).where(
                _AH.c.deployable_id.in_(deployable_ids), _AH.c.in_use.is_(True)
            )
        )
    }


def _prune(conn, host, seen_devices, seen_deployables, seen_handles):
    """Remove what ``host`` no longer reports, except what an ARQ holds
    (a handle in use keeps its deployable and device)."""
    for row in conn.execute(
        sa.select(_AH, _DEP.c.device_id)
        .join(_DEP, _DEP.c.id == _AH.c.deployable_id)
        .join(_DEV, _DEV.c.id == _DEP.c.device_id)
        .where(_DEV.c.hostname == host)
    ).fetchall():
        if row.uuid in seen_handles:
            continue
        if row.in_use:
            LOG.warning(
                'Host %s no longer reports attach handle %s, but '
                'accelerator request %s uses it: kept',
                host,
                row.uuid,
                row.arq_uuid,
            )
            continue
        conn.execute(_AH.delete().where(_AH.c.id == row.id))
    deployables = conn.execute(
        sa.select(_DEP)
        .join(_DEV, _DEV.c.id == _DEP.c.device_id)
        .where(_DEV.c.hostname == host)
    ).fetchall()
    busy = _handles_in_use(conn, [d.id for d in deployables])
    for row in deployables:
        if row.uuid in seen_deployables or row.id in busy:
            continue
        conn.execute(_AH.delete().where(_AH.c.deployable_id == row.id))
        attribute.delete_for_deployables(conn, [row.id])
        conn.execute(_DEP.delete().where(_DEP.c.id == row.id))
    for row in conn.execute(
        sa.select(_DEV).where(_DEV.c.hostname == host)
    ).fetchall():
        if row.uuid in seen_devices:
            continue
        left = conn.execute(
            sa.select(sa.func.count())
            .select_from(_DEP)
            .where(_DEP.c.device_id == row.id)
        ).scalar()
        if left:
            LOG.warning(
                'Host %s no longer reports device %s, but an '
                'accelerator request holds it: kept',
                host,
                row.uuid,
            )
            continue
        conn.execute(_DEV.delete().where(_DEV.c.id == row.id))


def _report_in(conn, host, devices, now, fresh=False):
    """:func:`report`'s work in the transaction of ``conn``; ``fresh``:
    the host has no recorded device, deployable or handle (its rows are
    inserted without reading first, and nothing is pruned)."""
    seen_devices, seen_deployables, seen_handles = set(), set(), set()
    for device in devices:
        values = {k: device.get(k) for k in DEVICE_FIELDS}
        values['hostname'] = host
        device_id = _upsert(conn, _DEV, device['uuid'], values, now, fresh)
        seen_devices.add(device['uuid'])
        for deployable in device.get('deployables') or ():
            values = {k: deployable.get(k) for k in DEPLOYABLE_FIELDS}
            values['device_id'] = device_id
            dep_id = _upsert(
                conn, _DEP, deployable['uuid'], values, now, fresh
            )
            seen_deployables.add(deployable['uuid'])
            for handle in deployable.get('attach_handles') or ():
                values = {k: handle.get(k) for k in HANDLE_FIELDS}
                values['deployable_id'] = dep_id
                _upsert(conn, _AH, handle['uuid'], values, now, fresh)
                seen_handles.add(handle['uuid'])
    if not fresh:
        _prune(conn, host, seen_devices, seen_deployables, seen_handles)
    return len(seen_devices)


def report(adb, host, devices):
    """Make ``host``'s recorded devices exactly ``devices`` (the agent's
    report, see :mod:`nimbus.accelerator.rpcapi`), in one transaction.
    Fields are updated in place; ``in_use`` of a handle is this service's
    own record and is never taken from the report. Devices, deployables
    and handles missing from the report are removed unless an ARQ holds a
    handle of theirs. Returns the number of devices reported."""
    now = base.utcnow()
    return adb.write(lambda conn: _report_in(conn, host, devices, now))


def report_many(adb, reports):
    """:func:`report` for each host of ``reports`` (``{host: devices}``),
    in one transaction; returns ``{host: number of devices}``. A host
    with no recorded device (a host's first report: one query tells them
    all) has its rows inserted without the reads and the prune, which
    were 3 queries per device, deployable and handle and 4 more per host
    at the start of a thousand simulated hosts. Any failure writes
    nothing."""
    now = base.utcnow()

    def run(conn):
        known = {
            r[0]
            for r in conn.execute(
                sa.select(_DEV.c.hostname)
                .where(_DEV.c.hostname.in_(list(reports)))
                .distinct()
            )
        }
        return {
            host: _report_in(conn, host, devices, now, host not in known)
            for host, devices in reports.items()
        }

    return adb.write(run)
