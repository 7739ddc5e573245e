"""``GET /os-cells`` (admin only; a Nimbus extension): the cells of the
deployment with how many hosts and servers each maps, for the ``nimbus
cells`` command. Connection URLs are not shown (they hold credentials)."""

import sqlalchemy as sa

from nimbus.api import policies
from nimbus.api import util
from nimbus.db.api import models


def _counts(session, column, *where):
    query = sa.select(column, sa.func.count()).group_by(column)
    for clause in where:
        query = query.where(clause)
    return dict(session.execute(query).all())


def index(req, resp):
    util.authorize(req, policies.CELLS)
    with util.deps(req).api_db.session() as session:
        cells = (
            session.execute(
                sa.select(models.CellMapping).order_by(models.CellMapping.name)
            )
            .scalars()
            .all()
        )
        hosts = _counts(session, models.HostMapping.cell_id)
        servers = _counts(
            session,
            models.InstanceMapping.cell_id,
            models.InstanceMapping.queued_for_delete.is_(False),
        )
        resp.media = {
            'cells': [
                {
                    'uuid': cell.uuid,
                    'name': cell.name,
                    'disabled': bool(cell.disabled),
                    'hosts': hosts.get(cell.id, 0),
                    'servers': servers.get(cell.id, 0),
                }
                for cell in cells
            ]
        }
