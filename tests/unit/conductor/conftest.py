"""Shared pieces of the conductor unit tests: a real SQLite API database
and a super conductor whose cells are replaced by recording lists."""

import pytest

from nimbus.common import db as common_db
from nimbus.conductor import super_conductor as sc
from nimbus import db as nimbus_db


class RecordingHandoff:
    """The hand-off to cells (:class:`nimbus.conductor.handoff.Handoff`)
    recording the uuids it would build, one at a time or in a batch."""

    def __init__(self):
        self.built = []

    def build_one(self, ctxt, uuid, request_spec, host_list, lease=None):
        self.built.append(uuid)

    def prepare_many(self, ctxt, request_spec, placed, lease):
        return placed

    def send_many(self, ctxt, request_spec, ready):
        self.built.extend(uuid for uuid, _host_list in ready)


class Conductor(sc.SuperConductor):
    """Records what would be built and buried instead of touching cells."""

    def __init__(self, api_db, scheduler, placement=None):
        super().__init__(None, api_db, None, scheduler, placement)
        self.handoff = RecordingHandoff()
        self.buried = []

    @property
    def built(self):
        return self.handoff.built

    def bury_in_cell0(self, ctxt, uuid, message, details, lease=None):
        self.buried.append((uuid, message, details))


@pytest.fixture
def api_db(tmp_path):
    url = 'sqlite:///%s/api.db' % tmp_path
    nimbus_db.sync_api(url)
    yield common_db.get_database(url)
    common_db.dispose_all()
