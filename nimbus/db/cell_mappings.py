"""The API database's ``cell_mappings`` and ``host_mappings`` tables: the
only module that writes SQL on them. Creating cells and mapping hosts to
them (``nimbus-manage cell ...``), and the reads of
:class:`nimbus.db.cells.CellDirectory`, ``GET /os-cells`` and the compute
API's services."""

import sqlalchemy as sa
from oslo_utils import uuidutils

from nimbus.common import db as common_db
from nimbus.common import rpc
from nimbus.db.api import models as api_models
from nimbus.db import cell_services


CELL0_UUID = '00000000-0000-0000-0000-000000000000'
CELL0_NAME = 'cell0'


class BusClash(ValueError):
    """A cell's transport URL reaches a bus another part already uses."""


def check_bus(api_db, name, transport_url, api_transport_url=None):
    """Refuse a cell bus shared with the API bus or with another cell.

    The super conductor and every cell conductor serve the topic
    ``conductor``: on a shared RabbitMQ vhost they would consume each
    other's messages. Same URL, or same broker host and vhost whatever the
    credentials, is the same bus. Raises :class:`BusClash` (or ValueError
    for a URL that does not parse).
    """
    rpc.bus_of(transport_url)  # parses, or ValueError
    if api_transport_url and rpc.same_bus(transport_url, api_transport_url):
        raise BusClash(
            'the transport URL of cell %s reaches the same broker vhost as '
            'the API bus (transport_url of this config): give the cell a '
            "vhost of its own, or the super conductor's messages reach "
            'the cell conductor' % name
        )
    for cell in list_cells(api_db):
        if cell['name'] == name or cell['uuid'] == CELL0_UUID:
            continue
        if rpc.same_bus(transport_url, cell['transport_url']):
            raise BusClash(
                'the transport URL of cell %s reaches the same broker vhost '
                'as cell %s: every cell needs a vhost of its own'
                % (name, cell['name'])
            )


def create_cell(api_db, name, transport_url, database_connection, uuid=None):
    """Create (or update) a cell mapping; returns its uuid."""
    with api_db.session() as session:
        row = session.execute(
            sa.select(api_models.CellMapping).where(
                api_models.CellMapping.name == name
            )
        ).scalar()
        if row is None:
            row = api_models.CellMapping(
                uuid=uuid or uuidutils.generate_uuid(),
                name=name,
                transport_url=transport_url,
                database_connection=database_connection,
            )
            session.add(row)
        else:
            row.transport_url = transport_url
            row.database_connection = database_connection
        session.flush()
        return row.uuid


def ensure_cell0(api_db, database_connection):
    return create_cell(
        api_db, CELL0_NAME, 'none:///', database_connection, uuid=CELL0_UUID
    )


def list_cells(api_db):
    with api_db.session() as session:
        rows = session.execute(
            sa.select(api_models.CellMapping).order_by(
                api_models.CellMapping.id
            )
        ).scalars()
        return [
            {
                'uuid': r.uuid,
                'name': r.name,
                'transport_url': r.transport_url,
                'database_connection': r.database_connection,
            }
            for r in rows
        ]


def discover_hosts(api_db, marks=None):
    """Map every compute host found in a cell database to that cell.

    Returns the hosts newly mapped. ``marks``: a dict the caller keeps
    between passes (a loop that discovers every few seconds). A cell
    whose compute nodes (their count and highest id) and host mappings
    (their count and highest id) are what they were at the end of the
    last pass has nothing new and is not read again: two small
    aggregate queries instead of every node's and every mapping's host.
    """
    added = []
    for cell in list_cells(api_db):
        if cell['uuid'] == CELL0_UUID:
            continue
        cell_db = common_db.get_database(cell['database_connection'])
        if marks is not None:
            mark = _mark(api_db, cell_db)
            if marks.get(cell['uuid']) == mark:
                continue
        with cell_db.session() as session:
            hosts = cell_services.node_hosts(session)
        with api_db.session() as session:
            cell_id = session.execute(
                sa.select(api_models.CellMapping.id).where(
                    api_models.CellMapping.uuid == cell['uuid']
                )
            ).scalar()
            mapped = set(
                session.execute(
                    sa.select(api_models.HostMapping.host)
                ).scalars()
            )
            for host in sorted(hosts - mapped):
                session.add(api_models.HostMapping(host=host, cell_id=cell_id))
                added.append(host)
        if marks is not None:
            marks[cell['uuid']] = _mark(api_db, cell_db)
    return added


def _mark(api_db, cell_db):
    """``(count, highest id)`` of a cell's compute nodes and of every
    host mapping: a node added, or a mapping removed, changes it."""
    with cell_db.session() as session:
        nodes = tuple(cell_services.node_mark(session))
    with api_db.session() as session:
        mappings = tuple(
            session.execute(
                sa.select(
                    sa.func.count(api_models.HostMapping.id),
                    sa.func.max(api_models.HostMapping.id),
                )
            ).one()
        )
    return nodes, mappings


def every_cell(session):
    """Every cell mapping row, oldest first."""
    return _cells(session, api_models.CellMapping.id)


def cells_by_name(session):
    """Every cell mapping row, by name."""
    return _cells(session, api_models.CellMapping.name)


def _cells(session, order):
    return list(
        session.execute(
            sa.select(api_models.CellMapping).order_by(order)
        ).scalars()
    )


def cell_id_of_host(session, host):
    """The id of the cell ``host`` is mapped to, or None."""
    return session.execute(
        sa.select(api_models.HostMapping.cell_id).where(
            api_models.HostMapping.host == host
        )
    ).scalar()


def host_is_mapped(session, host):
    return (
        session.execute(
            sa.select(api_models.HostMapping.id).where(
                api_models.HostMapping.host == host
            )
        ).first()
        is not None
    )


def unmap_host(session, host):
    session.execute(
        sa.delete(api_models.HostMapping).where(
            api_models.HostMapping.host == host
        )
    )


def host_counts(session):
    """``{cell_id: hosts mapped to it}``."""
    column = api_models.HostMapping.cell_id
    return dict(
        session.execute(
            sa.select(column, sa.func.count()).group_by(column)
        ).all()
    )
