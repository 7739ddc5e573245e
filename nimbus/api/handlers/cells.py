"""``GET /os-cells`` (admin only; a Nimbus extension): the cells of the
deployment with how many hosts and servers each maps, for the ``nimbus
cells`` command. Connection URLs are not shown (they hold credentials)."""

from nimbus.api import policies
from nimbus.api import util
from nimbus.db import cell_mappings
from nimbus.db import instance_mappings


def index(req, resp):
    util.authorize(req, policies.CELLS)
    with util.deps(req).api_db.session() as session:
        cells = cell_mappings.cells_by_name(session)
        hosts = cell_mappings.host_counts(session)
        servers = instance_mappings.count_by_cell(session)
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
