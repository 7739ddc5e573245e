"""``discover_hosts(api_db, marks)``: a pass reads a cell's hosts only
when its compute nodes or the host mappings moved since the last pass."""

from oslo_utils import uuidutils
import pytest

from nimbus.common import db as common_db
from nimbus.db.cell import models
from nimbus.db import cell_mappings
from nimbus.db import cell_services
from nimbus import db as nimbus_db


@pytest.fixture
def cell(tmp_path, monkeypatch):
    api_url = 'sqlite:///%s' % (tmp_path / 'api.sqlite')
    cell_url = 'sqlite:///%s' % (tmp_path / 'cell1.sqlite')
    nimbus_db.sync_api(api_url)
    nimbus_db.sync_cell(cell_url)
    api_db = common_db.get_database(api_url)
    cell_mappings.create_cell(api_db, 'cell1', 'inproc:///marks', cell_url)
    reads = []
    real = cell_services.node_hosts

    def node_hosts(session):
        reads.append(1)
        return real(session)

    monkeypatch.setattr(cell_services, 'node_hosts', node_hosts)
    yield api_db, common_db.get_database(cell_url), reads
    common_db.dispose_all()


def _node(cell_db, host):
    with cell_db.session() as session:
        session.add(
            models.ComputeNode(
                uuid=uuidutils.generate_uuid(),
                host=host,
                hypervisor_hostname=host,
            )
        )


def test_a_pass_reads_a_cell_only_when_something_moved(cell):
    api_db, cell_db, reads = cell
    _node(cell_db, 'h1')
    marks = {}
    assert cell_mappings.discover_hosts(api_db, marks=marks) == ['h1']
    assert cell_mappings.discover_hosts(api_db, marks=marks) == []
    assert len(reads) == 1  # the second pass read nothing
    _node(cell_db, 'h2')
    assert cell_mappings.discover_hosts(api_db, marks=marks) == ['h2']
    assert len(reads) == 2
    # A host unmapped (its service deleted) is mapped again at the next
    # pass while its node is there.
    with api_db.session() as session:
        cell_mappings.unmap_host(session, 'h2')
    assert cell_mappings.discover_hosts(api_db, marks=marks) == ['h2']
    # Without marks every pass reads.
    assert cell_mappings.discover_hosts(api_db) == []
    assert len(reads) == 4
