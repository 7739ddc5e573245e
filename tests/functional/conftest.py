"""Functional fixtures: the whole cloud in one process (real services,
in-process bus, SQLite)."""

import pytest

from nimbus.allinone import client as client_mod
from nimbus.allinone import cloud as cloud_mod
from nimbus.messaging_internals import inproc


@pytest.fixture
def make_cloud(tmp_path):
    clouds = []

    def make(**kwargs):
        # Each cloud gets buses of its own so tests never share a queue.
        tag = 't%d' % len(clouds)
        kwargs.setdefault(
            'transport_url', 'inproc:///%s-%s-api' % (tmp_path.name, tag)
        )
        kwargs.setdefault(
            'cell_transport_url',
            'inproc:///%s-%s-cell1' % (tmp_path.name, tag),
        )
        kwargs.setdefault('hosts', 4)
        kwargs.setdefault('overrides', {}).setdefault(
            'DEFAULT', {}
        ).setdefault('report_interval', 1)
        cloud = cloud_mod.Cloud(str(tmp_path / tag), **kwargs)
        cloud.start()
        clouds.append(cloud)
        return cloud

    yield make
    for cloud in clouds:
        cloud.stop()
    inproc.reset_buses()


@pytest.fixture
def admin(make_cloud):
    """A 4-host cloud and an admin client with a flavor and an image."""
    cloud = make_cloud()
    api = client_mod.ComputeClient(cloud.api_url)
    api.cloud = cloud
    api.flavor = api.create_flavor('m1.small', 2, 2048, 20)
    api.image = api.create_image('cirros')
    return api
