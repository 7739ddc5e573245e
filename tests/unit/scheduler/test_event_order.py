"""Scheduler cache events arriving late, twice or out of order (through the
RPC client, as the other services send them): a deleted instance or server
group never comes back, and a duplicate changes nothing."""

from nimbus.common.objects import InstanceInfo
from nimbus.common.objects import ServerGroupInfo
from nimbus.scheduler import tombstones
from tests.unit.scheduler.test_events import bus  # noqa: F401 (fixture)
from tests.unit.scheduler.test_events import server  # noqa: F401 (fixture)
from tests.unit.scheduler.test_events import state
from tests.unit.scheduler.test_events import wait_until


def _info(uuid):
    return InstanceInfo(uuid=uuid, flavor_id='1', image_ref=None)


def _settled(hm):
    wait_until(lambda: hm.pending_events == 0, 'the events applied')


def test_an_update_after_the_delete_does_not_resurrect(bus):  # noqa: F811
    api, hm, ctxt = bus
    api.update_instance_info(ctxt, 'host-1', _info('i-new'))
    wait_until(lambda: 'i-new' in state(hm, 'host-1').instances, 'added')
    api.delete_instance_info(ctxt, 'host-1', 'i-new')
    # The update sent before the delete, arriving after it.
    api.update_instance_info(ctxt, 'host-1', _info('i-new'))
    api.update_instance_info(ctxt, 'host-1', _info('i-later'))
    wait_until(lambda: 'i-later' in state(hm, 'host-1').instances, 'later')
    assert 'i-new' not in state(hm, 'host-1').instances
    # i-1, i-2 from the source, and i-later.
    assert state(hm, 'host-1').num_instances == 3


def test_a_delete_before_the_update_wins(bus):  # noqa: F811
    api, hm, ctxt = bus
    api.delete_instance_info(ctxt, 'host-2', 'i-early')
    api.update_instance_info(ctxt, 'host-2', [_info('i-early')])
    api.update_instance_info(ctxt, 'host-2', [_info('i-marker')])
    wait_until(lambda: 'i-marker' in state(hm, 'host-2').instances, 'marker')
    assert 'i-early' not in state(hm, 'host-2').instances
    # A sync listing it (computed before the delete) does not add it either.
    api.sync_instance_info(ctxt, 'host-2', ['i-3', 'i-marker', 'i-early'])
    api.update_instance_info(ctxt, 'host-2', [_info('i-marker-2')])
    wait_until(
        lambda: 'i-marker-2' in state(hm, 'host-2').instances, 'marker 2'
    )
    assert 'i-early' not in state(hm, 'host-2').instances


def test_an_update_twice_counts_once(bus):  # noqa: F811
    api, hm, ctxt = bus
    for _ in range(2):
        api.update_instance_info(ctxt, 'host-3', _info('i-twice'))
    api.delete_instance_info(ctxt, 'host-3', 'i-twice')
    api.delete_instance_info(ctxt, 'host-3', 'i-twice')
    api.update_instance_info(ctxt, 'host-3', _info('i-marker'))
    wait_until(lambda: 'i-marker' in state(hm, 'host-3').instances, 'marker')
    assert state(hm, 'host-3').num_instances == 1


def test_a_group_update_after_its_delete_is_dropped(bus):  # noqa: F811
    api, hm, ctxt = bus
    group = ServerGroupInfo(
        uuid='g-late', name='g', policy='affinity', rules={}, members=[]
    )
    api.update_server_group(ctxt, group)
    wait_until(lambda: hm.server_group('g-late') is not None, 'created')
    api.delete_server_group(ctxt, 'g-late')
    api.update_server_group(ctxt, group)
    marker = ServerGroupInfo(
        uuid='g-marker', name='m', policy='affinity', rules={}, members=[]
    )
    api.update_server_group(ctxt, marker)
    wait_until(lambda: hm.server_group('g-marker') is not None, 'marker')
    assert hm.server_group('g-late') is None


def test_a_reload_keeps_deleted_instances_out(bus):  # noqa: F811
    api, hm, ctxt = bus
    # The database read of a reload raced the delete of i-1.
    api.delete_instance_info(ctxt, 'host-1', 'i-1')
    wait_until(lambda: 'i-1' not in state(hm, 'host-1').instances, 'gone')
    hm.refresh()
    assert 'i-1' not in state(hm, 'host-1').instances
    assert 'i-2' in state(hm, 'host-1').instances


def test_tombstones_forget_the_oldest_first():
    graves = tombstones.Tombstones(size=3)
    for uuid in 'abcd':
        graves.bury(uuid)
    assert [u in graves for u in 'abcd'] == [False, True, True, True]
    graves.bury('b')  # buried again: the newest now
    graves.bury('e')
    assert [u in graves for u in 'bcde'] == [True, False, True, True]
    assert len(graves) == 3


def test_tombstones_forget_after_their_time():
    now = [1000.0]
    graves = tombstones.Tombstones(size=100, ttl=600, clock=lambda: now[0])
    graves.bury('a')
    now[0] += 300
    graves.bury('b')
    assert 'a' in graves and 'b' in graves
    now[0] += 301  # 'a' is 601 s old, 'b' 301 s
    assert 'a' not in graves and 'b' in graves
    graves.bury('c')  # burying forgets the expired ones
    assert len(graves) == 2
    now[0] += 600
    assert 'b' not in graves and 'c' not in graves
