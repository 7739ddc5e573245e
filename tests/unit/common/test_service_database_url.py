"""``[placement_database]``/``[accelerator_database]`` read by
:func:`nimbus.common.db.options.service_database_url`."""

from oslo_config import cfg
import pytest

from nimbus.accelerator import conf as accel_conf
from nimbus.common.db import options as db_options
from nimbus.placement import conf as placement_conf


@pytest.fixture
def conf():
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    accel_conf.register_opts(conf)
    conf([])
    return conf


@pytest.mark.parametrize(
    'group', ['placement_database', 'accelerator_database']
)
def test_unset_is_refused_and_sync_follows_the_option(conf, group):
    synced = []
    with pytest.raises(
        ValueError, match=r'\[%s\] connection is not set' % group
    ):
        db_options.service_database_url(conf, group, synced.append)
    conf.set_override('connection', 'sqlite://', group=group)
    conf.set_override('sync_on_startup', False, group=group)
    assert db_options.service_database_url(conf, group, synced.append) == (
        'sqlite://'
    )
    assert synced == []
    conf.set_override('sync_on_startup', True, group=group)
    db_options.service_database_url(conf, group, synced.append)
    assert synced == ['sqlite://']
