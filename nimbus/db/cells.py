"""Where things live: cell mappings, and a database and bus per cell.

The API database maps every cell to its transport URL and database URL,
every compute host to its cell, and every instance to its cell (``None``
while it is still a build request). :class:`CellDirectory` reads those
mappings and hands out the cell's :class:`~nimbus.common.db.Database` and
RPC transport. Cell0 (uuid of zeros) holds instances that never got a host.
"""

import dataclasses
import threading

from nimbus.common import db as common_db
from nimbus.common.db import options as db_options
from nimbus.common import exception
from nimbus.common import rpc
from nimbus.db import cell_mappings
from nimbus.db import instance_mappings
from nimbus.db.cell_mappings import CELL0_NAME  # noqa: F401
from nimbus.db.cell_mappings import CELL0_UUID


@dataclasses.dataclass(frozen=True)
class Cell:
    id: int
    uuid: str
    name: str
    transport_url: str
    database_connection: str
    disabled: bool = False

    @property
    def is_cell0(self):
        return self.uuid == CELL0_UUID

    def to_dict(self):
        return dataclasses.asdict(self)


class CellNotFound(exception.NotFound):
    msg_fmt = 'Cell %(cell)s could not be found.'


class CellDirectory:
    """Cell mappings of one deployment, read from the API database."""

    def __init__(self, conf, api_db):
        self.conf = conf
        self.api_db = api_db
        self._lock = threading.Lock()
        self._cells = None

    def refresh(self):
        with self.api_db.session() as session:
            rows = cell_mappings.every_cell(session)
            cells = [
                Cell(
                    r.id,
                    r.uuid,
                    r.name,
                    r.transport_url,
                    r.database_connection,
                    r.disabled,
                )
                for r in rows
            ]
        with self._lock:
            self._cells = {c.uuid: c for c in cells}
        return cells

    def cells(self, include_cell0=True):
        if self._cells is None:
            self.refresh()
        cells = sorted(self._cells.values(), key=lambda c: c.id)
        return [c for c in cells if include_cell0 or not c.is_cell0]

    def by_uuid(self, uuid):
        if self._cells is None or uuid not in self._cells:
            self.refresh()
        try:
            return self._cells[uuid]
        except KeyError as exc:
            raise CellNotFound(cell=uuid) from exc

    def by_id(self, cell_id):
        for cell in self.cells():
            if cell.id == cell_id:
                return cell
        self.refresh()
        for cell in self.cells():
            if cell.id == cell_id:
                return cell
        raise CellNotFound(cell=cell_id)

    def cell0(self):
        return self.by_uuid(CELL0_UUID)

    def db(self, cell):
        return common_db.get_database(
            cell.database_connection,
            pool=db_options.pool_options(self.conf.database),
        )

    def transport(self, cell):
        return rpc.get_transport(self.conf, cell.transport_url)

    def cell_for_host(self, host):
        with self.api_db.session() as session:
            cell_id = cell_mappings.cell_id_of_host(session, host)
        if cell_id is None:
            return None
        return self.by_id(cell_id)

    def cell_for_instance(self, instance_uuid):
        """The instance's cell, or None while it is a build request."""
        with self.api_db.session() as session:
            mapping = instance_mappings.get(session, instance_uuid)
        if mapping is None:
            raise exception.NotFound(
                'Instance %s could not be found.' % instance_uuid
            )
        if mapping.cell_id is None:
            return None
        return self.by_id(mapping.cell_id)
