import pytest

from nimbus.common import db as common_db
from tests.functional.api import fixtures


@pytest.fixture
def api(tmp_path):
    fixture = fixtures.ApiFixture(tmp_path)
    yield fixture
    common_db.dispose_all()
