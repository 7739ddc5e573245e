"""An in-process nimbus-api on SQLite with cell0 and cell1 and fake RPC."""

import datetime
import threading

from falcon import testing
from oslo_utils import uuidutils

from nimbus.api import app as api_app
from nimbus.db import cell_instances as conductor_instances
from nimbus.db import cells as cells_mod
from nimbus.common import config
from nimbus.common import db as common_db
from nimbus import db as nimbus_db
from nimbus.db.api import models as api_models
from nimbus.db.cell import models as cell_models

CELL1_UUID = '11111111-1111-1111-1111-111111111111'


class FakeConductor:
    def __init__(self, fail=False):
        self.calls = []
        self.fail = fail

    def schedule_and_build_instances(self, ctx, request_spec, instance_uuids):
        if self.fail:
            raise RuntimeError('bus down')
        # What its rpcapi puts on the wire.
        self.calls.append((ctx, request_spec.to_primitive(), instance_uuids))

    def migrate_server(
        self,
        ctx,
        instance_uuid,
        cell_uuid,
        request_id,
        flavor=None,
        host=None,
        cross_cell=False,
    ):
        self.moves = getattr(self, 'moves', [])
        self.moves.append(
            {
                'instance_uuid': instance_uuid,
                'cell_uuid': cell_uuid,
                'flavor': flavor,
                'host': host,
                'cross_cell': cross_cell,
            }
        )


class FakeCompute:
    """``uptimes``: host -> the uptime string its driver tells, or an
    exception to raise (hosts not in it answer NotImplementedError)."""

    def __init__(self, cell, log, uptimes=None):
        self.cell = cell
        self.log = log
        self.uptimes = uptimes if uptimes is not None else {}

    def get_host_uptime(self, ctx, host):
        self.log.append(('get_host_uptime', self.cell.name, host))
        answer = self.uptimes.get(host, NotImplementedError())
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def terminate_instance(self, ctx, host, instance_uuid):
        self.log.append(
            ('terminate_instance', self.cell.name, host, instance_uuid)
        )

    def external_instance_event(self, ctx, host, instance_uuid, events):
        # The API hands InstanceEvents (contracts) to the compute's rpcapi.
        self.log.append(
            (
                'external_instance_event',
                self.cell.name,
                host,
                instance_uuid,
                [
                    {'name': e.name, 'tag': e.tag, 'status': e.status}
                    for e in events
                ],
            )
        )


# The compute casts of the server actions (RPC 1.2): logged as sent.
_ACTION_CASTS = (
    'stop_instance',
    'start_instance',
    'reboot_instance',
    'pause_instance',
    'unpause_instance',
    'suspend_instance',
    'resume_instance',
    'rescue_instance',
    'unrescue_instance',
    'rebuild_instance',
    'set_admin_password',
    'soft_delete_instance',
    'restore_instance',
    'snapshot_instance',
)


def _action_cast(method):
    def cast(self, ctx, host, instance_uuid, request_id, *args):
        self.log.append(
            (method, self.cell.name, host, instance_uuid, request_id) + args
        )

    cast.__name__ = method
    return cast


for _method in _ACTION_CASTS:
    setattr(FakeCompute, _method, _action_cast(_method))


def _console_output(self, ctx, host, instance_uuid, length=None):
    self.log.append(
        ('get_console_output', self.cell.name, host, instance_uuid)
    )
    return 'console of %s\n' % instance_uuid


def _diagnostics(self, ctx, host, instance_uuid):
    self.log.append(('get_diagnostics', self.cell.name, host, instance_uuid))
    return {'state': 'running', 'driver': 'fake', 'num_cpus': 1}


FakeCompute.get_console_output = _console_output
FakeCompute.get_diagnostics = _diagnostics


class FakeScheduler:
    def __init__(self):
        self.calls = []

    def dry_run(self, ctx, request_spec):
        self.calls.append(('dry_run', request_spec.to_primitive()))
        return {
            'ranked': [{'host': 'host1', 'weight': 1.0}],
            'rejected': [
                {
                    'host': 'host2',
                    'filter': 'ComputeFilter',
                    'reason': 'service disabled',
                }
            ],
        }

    def __getattr__(self, name):
        if name.startswith('update_') or name.startswith('delete_'):
            # One payload is recorded as itself, several as a tuple; a
            # cache event's contract as the record the scheduler keeps.
            return lambda ctx, *args: self.calls.append(
                (name, _cached(args[0]) if len(args) == 1 else args)
            )
        raise AttributeError(name)


def _cached(payload):
    if isinstance(payload, list):
        return [_cached(p) for p in payload]
    return payload.to_cache() if hasattr(payload, 'to_cache') else payload


class FakePlacement:
    """Records allocation removals; ``fail`` makes placement unreachable."""

    def __init__(self, fail=False):
        self.removed = []
        self.fail = fail

    def remove_allocations(self, ctx, consumer_uuid):
        if self.fail:
            raise ConnectionError('placement is down')
        self.removed.append(consumer_uuid)


class ApiFixture:
    """Databases, cells, fakes and a falcon TestClient for nimbus-api."""

    def __init__(self, tmp_path, overrides=None, config_text=None):
        """``overrides`` ``{group: {name: value}}`` go through
        ``set_override``; ``config_text`` is written to a config file the
        conf parses first (for what only a file does, such as deprecated
        option names)."""
        self.api_url = 'sqlite:///%s/api.db' % tmp_path
        self.cell0_url = 'sqlite:///%s/cell0.db' % tmp_path
        self.cell1_url = 'sqlite:///%s/cell1.db' % tmp_path
        nimbus_db.sync_api(self.api_url)
        nimbus_db.sync_cell(self.cell0_url)
        nimbus_db.sync_cell(self.cell1_url)
        values = {
            'api': {'auth_strategy': 'noauth2'},
            'api_database': {'connection': self.api_url},
        }
        for group, opts in (overrides or {}).items():
            values.setdefault(group, {}).update(opts)
        args = []
        if config_text is not None:
            path = tmp_path / 'nimbus.conf'
            path.write_text(config_text)
            args = ['--config-file', str(path)]
        self.conf = config.build_conf(args, overrides=values)
        self.api_db = common_db.get_database(self.api_url)
        with self.api_db.session() as session:
            session.add(
                api_models.CellMapping(
                    uuid=cells_mod.CELL0_UUID,
                    name='cell0',
                    transport_url='inproc:///cell0',
                    database_connection=self.cell0_url,
                )
            )
            session.add(
                api_models.CellMapping(
                    uuid=CELL1_UUID,
                    name='cell1',
                    transport_url='inproc:///cell1',
                    database_connection=self.cell1_url,
                )
            )
        self.cells = cells_mod.CellDirectory(self.conf, self.api_db)
        self.conductor = FakeConductor()
        self.scheduler = FakeScheduler()
        self.compute_log = []
        self.uptimes = {}
        self.app = api_app.make_app(
            self.conf,
            api_db=self.api_db,
            cells=self.cells,
            conductor_api=self.conductor,
            scheduler_api=self.scheduler,
            compute_api_factory=lambda cell: FakeCompute(
                cell, self.compute_log, self.uptimes
            ),
        )
        self.client = testing.TestClient(self.app)
        self._lock = threading.Lock()

    # -- requests --------------------------------------------------------
    def headers(self, user='demo', project=None, roles=None, version=None):
        headers = {'X-Auth-Token': user + (':' + project if project else '')}
        if roles:
            headers['X-Roles'] = roles
        if version:
            headers['OpenStack-API-Version'] = 'compute %s' % version
        return headers

    def req(
        self,
        method,
        path,
        body=None,
        user='demo',
        project=None,
        roles=None,
        version=None,
        headers=None,
        **kwargs,
    ):
        all_headers = self.headers(user, project, roles, version)
        all_headers.update(headers or {})
        if body is not None:
            kwargs['json'] = body
        return self.client.simulate_request(
            method, path, headers=all_headers, **kwargs
        )

    def admin(self, method, path, body=None, version=None, **kwargs):
        return self.req(
            method, path, body, user='admin', version=version, **kwargs
        )

    # -- data ------------------------------------------------------------
    @property
    def cell1(self):
        return self.cells.by_uuid(CELL1_UUID)

    @property
    def cell0(self):
        return self.cells.cell0()

    def add_compute(
        self,
        host,
        cell=None,
        disabled=False,
        up=True,
        vcpus=8,
        memory_mb=16384,
        local_gb=100,
    ):
        cell = cell or self.cell1
        now = datetime.datetime.utcnow()
        seen = now if up else now - datetime.timedelta(hours=1)
        node_uuid = uuidutils.generate_uuid()
        with self.cells.db(cell).session() as session:
            session.add(
                cell_models.Service(
                    uuid=uuidutils.generate_uuid(),
                    host=host,
                    binary='nimbus-compute',
                    topic='compute',
                    disabled=disabled,
                    last_seen_up=seen,
                )
            )
            session.add(
                cell_models.ComputeNode(
                    uuid=node_uuid,
                    host=host,
                    hypervisor_hostname=host,
                    vcpus=vcpus,
                    memory_mb=memory_mb,
                    local_gb=local_gb,
                    host_ip='192.0.2.%d' % (len(host) + 10),
                    cpu_info={'arch': 'x86_64'},
                )
            )
        with self.api_db.session() as session:
            session.add(api_models.HostMapping(host=host, cell_id=cell.id))
        return node_uuid

    def add_service(self, host, binary, cell=None):
        cell = cell or self.cell1
        with self.cells.db(cell).session() as session:
            session.add(
                cell_models.Service(
                    uuid=uuidutils.generate_uuid(),
                    host=host,
                    binary=binary,
                    last_seen_up=datetime.datetime.utcnow(),
                )
            )

    def add_flavor(
        self,
        flavorid='1',
        name='m1.small',
        vcpus=1,
        memory_mb=512,
        root_gb=1,
        extra_specs=None,
    ):
        with self.api_db.session() as session:
            flavor = api_models.Flavor(
                flavorid=flavorid,
                name=name,
                vcpus=vcpus,
                memory_mb=memory_mb,
                root_gb=root_gb,
            )
            for key, value in (extra_specs or {}).items():
                flavor.extra_specs.append(
                    api_models.FlavorExtraSpec(key=key, value=value)
                )
            session.add(flavor)

    def add_image(self, image_id=None, properties=None, **kwargs):
        image_id = image_id or uuidutils.generate_uuid()
        with self.api_db.session() as session:
            session.add(
                api_models.Image(
                    id=image_id,
                    name='cirros',
                    properties=properties or {},
                    **kwargs,
                )
            )
        return image_id

    def place(
        self, uuid, cell=None, host='host1', vm_state='active', fault=None
    ):
        """Do what the conductor does: move a build request to a cell."""
        cell = cell or self.cell1
        with self.api_db.session() as session:
            br = (
                session.query(api_models.BuildRequest)
                .filter_by(instance_uuid=uuid)
                .one()
            )
            instance = br.instance
            session.delete(br)
            session.query(api_models.InstanceMapping).filter_by(
                instance_uuid=uuid
            ).update({'cell_id': cell.id})
        with self.cells.db(cell).session() as session:
            session.add(
                cell_models.Instance(
                    uuid=uuid,
                    display_name=instance['display_name'],
                    project_id=instance['project_id'],
                    user_id=instance['user_id'],
                    host=host,
                    node=host,
                    vm_state=vm_state,
                    task_state=None,
                    flavor=instance['flavor'],
                    image_ref=instance['image_ref'],
                    availability_zone=instance['availability_zone'],
                    metadata_items=instance['metadata'],
                    server_attributes={
                        key: instance[key]
                        for key in conductor_instances.SERVER_ATTRIBUTES
                        if key in instance
                    },
                )
            )
            if fault:
                session.add(
                    cell_models.InstanceFault(
                        instance_uuid=uuid,
                        code=500,
                        message=fault[0],
                        details=fault[1],
                        host=host,
                    )
                )
