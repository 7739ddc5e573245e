"""DBHostInfoSource against SQLite API and cell databases built from the models."""

import datetime

from nimbus.db import cells as cells_mod
from nimbus.common import db as common_db
from nimbus.db.api import models as api_models
from nimbus.db.cell import models as cell_models
from nimbus.scheduler import db_source
from nimbus.scheduler.host_manager import HostManager


class OneCell:
    def __init__(self, db, cell):
        self._db, self._cell = db, cell

    def cells(self, include_cell0=True):
        return [self._cell]

    def db(self, cell):
        return self._db


def test_db_source_feeds_host_manager(tmp_path, conf):
    api = common_db.Database(f'sqlite:///{tmp_path}/api.db')
    cell_db = common_db.Database(f'sqlite:///{tmp_path}/cell.db')
    api_models.Base.metadata.create_all(api.engine)
    cell_models.Base.metadata.create_all(cell_db.engine)
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    with cell_db.session() as s:
        s.add(
            cell_models.ComputeNode(
                uuid='cn-1',
                host='h1',
                hypervisor_hostname='h1',
                hypervisor_type='QEMU',
                hypervisor_version=7000000,
                vcpus=8,
                memory_mb=8192,
                local_gb=100,
                cpu_info={'arch': 'x86_64'},
                numa_topology={
                    'cells': [
                        {
                            'id': 0,
                            'cpuset': [0, 1],
                            'pcpuset': [2, 3],
                            'memory': 4096,
                        }
                    ]
                },
                pci_stats=[{'vendor_id': '8086', 'count': 2}],
                metrics={'cpu.percent': 5},
                current_workload=2,
                failed_builds=1,
            )
        )
        s.add(
            cell_models.Service(
                uuid='s1',
                host='h1',
                binary='nimbus-compute',
                disabled=True,
                last_seen_up=now,
            )
        )
        s.add(
            cell_models.Instance(
                uuid='i1',
                project_id='p',
                host='h1',
                vm_state='active',
                flavor={'flavorid': 'f1'},
                image_ref='img-1',
            )
        )
        s.add(
            cell_models.Instance(
                uuid='i2',
                project_id='p',
                host='h1',
                vm_state='active',
                flavor={'flavorid': 'f1'},
                image_ref='gone',
            )
        )
    with api.session() as s:
        s.add(
            api_models.Image(
                id='img-1', name='u', properties={'os_distro': 'ubuntu'}
            )
        )
        s.add(
            api_models.Image(
                id='img-2', name='w', properties={'os_distro': 'windows'}
            )
        )
        agg = api_models.Aggregate(uuid='a1', name='az')
        s.add(agg)
        s.flush()
        s.add(api_models.AggregateHost(aggregate_id=agg.id, host='h1'))
        s.add(
            api_models.AggregateMetadata(
                aggregate_id=agg.id, key='availability_zone', value='az1'
            )
        )
        grp = api_models.InstanceGroup(
            uuid='g1',
            name='g',
            project_id='p',
            policy='anti-affinity',
            rules={},
        )
        s.add(grp)
        s.flush()
        s.add(
            api_models.InstanceGroupMember(group_id=grp.id, instance_uuid='i1')
        )
    cell = cells_mod.Cell(
        1, 'cell-1', 'cell1', 'inproc://', str(cell_db.engine.url)
    )
    src = db_source.DBHostInfoSource(api, OneCell(cell_db, cell))
    hm = HostManager(conf, src)
    hm.refresh()
    hs = hm.host_state('cn-1')
    assert (
        hs.cell_uuid == 'cell-1' and hs.vcpus_total == 8 and hs.num_io_ops == 2
    )
    assert hs.service_disabled and hs.service_up
    assert hs.availability_zone == 'az1' and 'i1' in hs.instances
    assert hs.numa_cells[0].pcpuset == {2, 3} and hs.pci_device_count() == 2
    assert hs.failed_builds == 1 and hs.metrics == {'cpu.percent': 5}
    assert hm.server_group('g1')['members'] == ['i1']
    assert hs.instances['i1']['group_uuid'] == 'g1'
    # image properties: from the API database's images table by image_ref
    assert hs.instances['i1']['image_properties'] == {'os_distro': 'ubuntu'}
    assert hs.instances['i2']['image_properties'] == {}
    # an event with only image_ref is resolved the same way
    hm.update_instance_info('h1', [{'uuid': 'i3', 'image_ref': 'img-2'}])
    assert hs.instances['i3']['image_properties'] == {'os_distro': 'windows'}
    hm.update_instance_info(
        'h1',
        [
            {
                'uuid': 'i4',
                'image_ref': 'img-1',
                'image_properties': {'os_distro': 'sent'},
            }
        ],
    )
    assert hs.instances['i4']['image_properties'] == {'os_distro': 'sent'}
    assert src.image_properties('nope') is None


def _heartbeats(tmp_path, rows):
    """A DBHostInfoSource over one cell whose service table holds ``rows``:
    ``(host, binary, seconds since the last heartbeat)``."""
    cell_db = common_db.Database(f'sqlite:///{tmp_path}/hb-cell.db')
    cell_models.Base.metadata.create_all(cell_db.engine)
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    with cell_db.session() as s:
        for i, (host, binary, age) in enumerate(rows):
            s.add(
                cell_models.Service(
                    uuid='s%d' % i,
                    host=host,
                    binary=binary,
                    last_seen_up=now - datetime.timedelta(seconds=age),
                )
            )
        s.commit()
    cell = cells_mod.Cell(
        1, 'c1', 'cell1', 'inproc://', str(cell_db.engine.url)
    )
    source = db_source.DBHostInfoSource(
        None, OneCell(cell_db, cell), service_down_time=60
    )
    return {s['host']: s['up'] for s in source.services()}


def test_computes_silent_with_their_conductor_alive_are_down(tmp_path):
    up = _heartbeats(
        tmp_path,
        [
            ('ctl', 'nimbus-conductor', 5),
            ('h1', 'nimbus-compute', 5),
            ('h2', 'nimbus-compute', 300),
        ],
    )
    assert up == {'h1': True, 'h2': False}


def test_a_dead_conductor_does_not_make_its_computes_down(tmp_path):
    # The cell conductor records heartbeats; it was down for 5 minutes, so
    # every heartbeat is old. The computes are judged against the newest:
    # h1 and h2 kept up with each other, h3 had stopped long before.
    up = _heartbeats(
        tmp_path,
        [
            ('ctl', 'nimbus-conductor', 300),
            ('h1', 'nimbus-compute', 300),
            ('h2', 'nimbus-compute', 310),
            ('h3', 'nimbus-compute', 900),
        ],
    )
    assert up == {'h1': True, 'h2': True, 'h3': False}


def test_without_a_conductor_heartbeat_the_clock_is_now(tmp_path):
    up = _heartbeats(
        tmp_path, [('h1', 'nimbus-compute', 300), ('h2', 'nimbus-compute', 5)]
    )
    assert up == {'h1': False, 'h2': True}
