"""An in-process placement (the real REST app and its SQLite database,
no HTTP) whose client records every request, for the agent's tests."""

import pytest

from nimbus.common import config
from nimbus.common import context
from nimbus.common.clients.placement import PlacementClient
from nimbus.placement import db as placement_db
from nimbus.placement import direct


class RecordingSession:
    """Passes requests to the in-process placement and remembers
    ``(method, path)`` of each."""

    def __init__(self, session):
        self.session = session
        self.calls = []

    def request(self, method, url, **kwargs):
        self.calls.append((method, url.replace(direct.BASE_URL, '')))
        return self.session.request(method, url, **kwargs)

    @property
    def writes(self):
        return [call for call in self.calls if call[0] != 'GET']


class Placement:
    def __init__(self, session):
        # The placement app behind the session (for its bulk writer).
        self.app = session.get_adapter(direct.BASE_URL).app
        self.recorder = RecordingSession(session)
        self.client = PlacementClient(direct.BASE_URL, session=self.recorder)
        self.ctxt = context.get_admin_context()

    def get(self, path, **params):
        response = self.client.request(
            self.ctxt, 'GET', path, params=params or None
        )
        assert response.status_code == 200, response.text
        return response.json()

    def add_root(self, uuid, name):
        self.client.ensure_resource_provider(self.ctxt, uuid, name)
        self.client.set_inventory(
            self.ctxt,
            uuid,
            {
                'VCPU': {
                    'total': 8,
                    'reserved': 0,
                    'min_unit': 1,
                    'max_unit': 8,
                    'step_size': 1,
                    'allocation_ratio': 1.0,
                }
            },
        )

    def tree(self, root):
        """``{name: provider}`` of the tree, with inventories and traits."""
        providers = self.client.get_provider_tree(self.ctxt, root)
        return {p['name']: p for p in providers}


@pytest.fixture
def placement(tmp_path):
    url = 'sqlite:///%s/placement.sqlite' % tmp_path
    placement_db.sync(url)
    conf = config.build_conf(
        [], overrides={'placement_database': {'connection': url}}
    )
    with direct.PlacementDirect(conf) as session:
        yield Placement(session)
