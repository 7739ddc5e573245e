"""A real Nimbus placement in this process (``nimbus.placement.direct``: the REST API
and its SQLite database, without HTTP) and the scheduler pieces around it, for
functional tests that need placement's own answers (candidates, claims, 409s)."""

from nimbus.common import config
from nimbus.common import context
from nimbus.common.clients.placement import PlacementClient
from nimbus.placement import db as placement_db
from nimbus.placement import direct
from nimbus.scheduler import driver, testing
from nimbus.scheduler.host_manager import HostManager
from nimbus.scheduler.host_source import InMemoryHostInfoSource

RC_DEFAULTS = {
    'min_unit': 1,
    'step_size': 1,
    'reserved': 0,
    'allocation_ratio': 1.0,
}


class RealPlacement:
    def __init__(self, workdir):
        url = 'sqlite:///%s/placement.sqlite' % workdir
        placement_db.sync(url)
        conf = config.build_conf(
            [], overrides={'placement_database': {'connection': url}}
        )
        self._direct = direct.PlacementDirect(conf)
        self.session = self._direct.__enter__()
        self.client = PlacementClient(direct.BASE_URL, session=self.session)
        self.ctxt = context.get_admin_context()

    def close(self):
        self._direct.__exit__(None, None, None)

    def provider(self, uuid, name, inventory, parent=None, traits=()):
        """Create a provider with ``inventory`` {rc: total} (custom classes created)."""
        self.client.ensure_resource_provider(
            self.ctxt, uuid, name, parent_provider_uuid=parent
        )
        for rc in inventory:
            if rc.startswith('CUSTOM_'):
                self.client.request(
                    self.ctxt, 'PUT', '/resource_classes/%s' % rc
                )
        self.client.set_inventory(
            self.ctxt,
            uuid,
            {
                rc: dict(RC_DEFAULTS, total=total, max_unit=total)
                for rc, total in inventory.items()
            },
        )
        if traits:
            self.client.set_traits(self.ctxt, uuid, list(traits))

    def allocations(self, consumer):
        return self.client.get_allocations_for_consumer(self.ctxt, consumer)

    def usages(self, rp):
        return self.client.request(
            self.ctxt, 'GET', '/resource_providers/%s/usages' % rp
        ).json()['usages']


def compute_hosts(placement, n, vcpus=4, memory_mb=8192, local_gb=100, **kw):
    """``n`` compute nodes (host-0..) with matching root providers in placement;
    returns the node records."""
    nodes = []
    for i in range(n):
        cn = testing.compute_node(
            i,
            vcpus=vcpus,
            memory_mb=memory_mb,
            local_gb=local_gb,
            vcpus_used=0,
            memory_mb_used=0,
            local_gb_used=0,
            cpu_allocation_ratio=1.0,
            numa_topology={'cells': []},
            pci_stats=[],
            failed_builds=0,
            num_io_ops=0,
            **kw,
        )
        placement.provider(
            cn['uuid'],
            cn['host'],
            {'VCPU': vcpus, 'MEMORY_MB': memory_mb, 'DISK_GB': local_gb},
        )
        nodes.append(cn)
    return nodes


def scheduler(
    conf, placement, nodes, records=None, aggregates=(), instances=None
):
    services = [
        {
            'host': cn['host'],
            'binary': 'nimbus-compute',
            'disabled': False,
            'up': True,
        }
        for cn in nodes
    ]
    hm = HostManager(
        conf,
        InMemoryHostInfoSource(
            nodes, services, aggregates, instances or {}, []
        ),
    )
    hm.refresh()

    def record(ctxt, outcome, spec, detail):
        if records is not None:
            records.append((outcome, list(spec.instance_uuids), detail))

    return driver.Scheduler(conf, placement.client, hm, record=record)
