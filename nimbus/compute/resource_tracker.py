"""Keeps placement and the cell's compute node record true to the hypervisor.

At startup, and then every ``[compute] update_resources_interval`` seconds,
the tracker asks the driver to describe its provider tree and writes what
changed to placement. A driver that needs inventory moved between
providers raises ReshapeNeeded; at startup the tracker then collects every
allocation of the tree, lets the driver move them, and sends the whole
picture to ``POST /reshaper`` in one call. Outside startup ReshapeNeeded
(and any ReshapeFailed) propagates: the agent stops rather than run with a
tree placement does not have.

Between reads of the tree (``[compute] provider_tree_refresh_interval``)
the tracker works from its copy of what placement last had: a periodic
update with nothing changed costs no placement request, and the compute
node record goes to the cell conductor only when it differs from the last
one sent (or with the next read). A read first lists the tree (one
request): when every provider is there at the generation of the copy,
placement changed nothing and the copy stands; else the whole tree is
read. At a thousand simulated hosts the reads
were five placement requests and two conductor calls per host per
``update_resources_interval``.
"""

import time
import uuid as uuidlib

from oslo_log import log as logging

from nimbus.common import exception as common_exc
from nimbus.common.clients import placement as placement_client
from nimbus.common.objects import ComputeNodeRecord
from nimbus.compute import exception
from nimbus.compute import provider_tree as ptree
from nimbus.compute.virt import driver as driver_mod

LOG = logging.getLogger(__name__)

_NODE_NAMESPACE = uuidlib.UUID('0a7e5d8e-3b64-4c7f-9a0e-4f3cbf2bd1a7')


def compute_node_uuid(nodename):
    """Stable across restarts: the compute holds no database to look it up."""
    return str(uuidlib.uuid5(_NODE_NAMESPACE, nodename))


class ResourceTracker:
    def __init__(self, conf, host, driver, placement, cell_conductor):
        self.conf = conf
        self.host = host
        self.nodename = host
        self.driver = driver
        self.placement = placement
        self.conductor = cell_conductor
        self.node_uuid = compute_node_uuid(self.nodename)
        self.failed_builds = 0
        # Set by whoever listed placement's providers and did not find the
        # root (the simulated hosts of a process list them once for all):
        # the first read creates it without asking first. One use only.
        self.root_absent = False
        # The tree a batch of hosts wrote for this one before its start
        # (:meth:`written`): the first read takes it. One use only.
        self._written = None
        # The root provider's inventory as last written to placement.
        self.root_inventory = None
        # The tree as placement has it after our last read or write, and
        # when it was last read (monotonic); None: read it next time.
        self._tree = None
        self._tree_read_at = None
        # The node record last sent, and when (monotonic).
        self._node_sent = None
        self._node_sent_at = None
        # The node record went in a batch before the start (:meth:`sent`):
        # the start's report sends it only if it differs. One use only.
        self._node_ahead = False

    def _refresh_interval(self):
        return self.conf.compute.provider_tree_refresh_interval

    def _fresh(self, at):
        interval = self._refresh_interval()
        return (
            at is not None
            and interval > 0
            and time.monotonic() - at < interval
        )

    def forget(self):
        """Drop the copies: the next update reads placement and sends the
        node record."""
        self._tree = None
        self._node_sent = None

    # -- compute node record -------------------------------------------

    def node_record(self, instances=()):
        facts = self.driver.node_facts()
        conf = self.conf.compute
        used = {
            'vcpus_used': 0,
            'memory_mb_used': conf.reserved_host_memory_mb,
            'local_gb_used': 0,
        }
        for instance in instances:
            flavor = instance.flavor or {}
            used['vcpus_used'] += flavor.get('vcpus', 0)
            used['memory_mb_used'] += flavor.get('memory_mb', 0)
            used['local_gb_used'] += flavor.get('root_gb', 0) + flavor.get(
                'ephemeral_gb', 0
            )
        record = dict(facts, **used)
        record.update(
            {
                'uuid': self.node_uuid,
                'host': self.host,
                'hypervisor_hostname': self.nodename,
                'host_ip': conf.host_ip,
                'running_vms': len(instances),
                # What placement has (after the last update), by Nova's rule.
                'cpu_allocation_ratio': driver_mod.allocation_ratio(
                    self.conf, 'VCPU', self.root_inventory
                ),
                'ram_allocation_ratio': driver_mod.allocation_ratio(
                    self.conf, 'MEMORY_MB', self.root_inventory
                ),
                'disk_allocation_ratio': driver_mod.allocation_ratio(
                    self.conf, 'DISK_GB', self.root_inventory
                ),
                'failed_builds': self.failed_builds,
                # The driver's free-form stats (ComputeCapabilitiesFilter).
                'stats': {
                    str(k): str(v)
                    for k, v in (facts.get('stats') or {}).items()
                },
            }
        )
        return record

    def sent(self, record):
        """``record`` (:meth:`node_record`) reached the cell in a batch
        for many hosts before this one started: the start's report
        (forced) sends its record only if it differs."""
        self._node_sent, self._node_sent_at = record, time.monotonic()
        self._node_ahead = True

    def delivered(self, record):
        """``record`` (:meth:`node_record`), which :meth:`report_node`
        left in a batch, reached the cell (the host group sent the batch
        for many hosts)."""
        self._node_sent, self._node_sent_at = record, time.monotonic()

    def report_node(self, ctxt, instances=(), force=True, batch=None):
        """Send the node record; with ``force=False`` only when it differs
        from the last one sent or that is older than the refresh
        interval. Returns the conductor's answer, None when not sent.
        ``batch`` (a list): the record is appended to it as ``(self,
        record)`` instead of sent; whoever sends the batch calls
        :meth:`delivered` (until then the next report sends it again)."""
        record = self.node_record(instances)
        ahead, self._node_ahead = self._node_ahead, False
        if (
            (ahead or not force)
            and record == self._node_sent
            and self._fresh(self._node_sent_at)
        ):
            return None
        self._node_sent = None
        if batch is not None:
            batch.append((self, record))
            return None
        return self.send(ctxt, record)

    def send(self, ctxt, record):
        """Send ``record`` (:meth:`node_record`) in a call of its own;
        the conductor's answer."""
        answer = self.conductor.compute_node_update(
            ctxt, ComputeNodeRecord.from_primitive(record)
        )
        self.delivered(record)
        return answer

    # -- provider tree ---------------------------------------------------

    def _unchanged_tree(self, ctxt):
        """The copy of the tree, when one listing of placement's tree shows
        exactly its providers, each at the generation the copy has (any
        write to a provider's inventory, traits, aggregates or
        allocations moves its generation): nothing to read again. Else
        None, and the caller reads the whole tree (one listing and three
        requests per provider, where this is one request)."""
        if self._tree is None:
            return None
        try:
            listed = self.placement.list_tree(ctxt, self.node_uuid)
        except common_exc.PlacementError:
            return None
        have = {
            p.uuid: (p.name, p.parent_uuid, p.generation)
            for p in self._tree.providers()
        }
        seen = {
            p['uuid']: (p['name'], p['parent_provider_uuid'], p['generation'])
            for p in listed
        }
        if seen == have:
            return self._tree.copy()
        if any(seen.get(uuid) != known for uuid, known in have.items()):
            return None
        # Only new providers under the copy's (another agent's children:
        # the accelerator agent's devices after the start): those are read,
        # 3 requests each, the rest of the copy stands.
        return self._with_new(
            ctxt, [p for p in listed if p['uuid'] not in have]
        )

    def _with_new(self, ctxt, listed):
        """The copy of the tree with the providers ``listed`` (new under
        it) read and added; None when that fails or one hangs from no
        provider of the tree."""
        try:
            new = self.placement.get_provider_tree(
                ctxt, self.node_uuid, providers=listed
            )
        except common_exc.PlacementError:
            return None
        tree = self._tree.copy()
        while new:
            placed = [p for p in new if tree.exists(p['parent_provider_uuid'])]
            if not placed:
                return None
            for provider in placed:
                tree.new_child(
                    provider['name'],
                    provider['parent_provider_uuid'],
                    provider['uuid'],
                    provider['generation'],
                )
                tree.update_inventory(
                    provider['uuid'], provider['inventories']
                )
                tree.update_traits(provider['uuid'], provider['traits'])
                tree.update_aggregates(
                    provider['uuid'], provider['aggregates']
                )
            new = [p for p in new if not tree.exists(p['uuid'])]
        return tree

    def planned_tree(self):
        """The tree the driver describes for this node when placement
        has none of it yet (what the startup update would write: the
        root created, then each provider's inventory and traits), for a
        batch to write with other hosts' (:meth:`written`). None when the
        driver asks for a reshape: the startup update handles that."""
        tree = ptree.ProviderTree()
        tree.new_root(self.nodename, self.node_uuid, 0)
        try:
            self.driver.update_provider_tree(tree, self.nodename)
        except exception.ReshapeNeeded:
            return None
        return tree

    def written(self, tree):
        """``tree`` (from :meth:`planned_tree`, each provider at the
        generation placement gave it) was written to placement by a
        batch: the startup update takes it as read instead of creating
        the root and reading, and has nothing left to write."""
        self.root_absent = False
        self._written = tree

    def planned_record(self):
        """The node record of this host without instances, its ratios
        from the tree a batch wrote (:meth:`written`); None when no batch
        wrote it."""
        if self._written is None:
            return None
        self.root_inventory = self._written.data(self.node_uuid).inventory
        return self.node_record()

    def _read_tree(self, ctxt):
        written, self._written = self._written, None
        if written is not None:
            return written
        absent, self.root_absent = self.root_absent, False
        root = self.placement.ensure_resource_provider(
            ctxt, self.node_uuid, self.nodename, expect_new=absent
        )
        tree = ptree.ProviderTree()
        if root.get('created') and root.get('generation') is not None:
            # Just created: nothing else of the tree can exist yet.
            tree.new_root(root['name'], root['uuid'], root['generation'])
            return tree
        providers = self.placement.get_provider_tree(ctxt, self.node_uuid)
        for provider in sorted(
            providers,
            key=lambda p: (p['parent_provider_uuid'] is not None, p['name']),
        ):
            if provider['parent_provider_uuid'] is None:
                tree.new_root(
                    provider['name'], provider['uuid'], provider['generation']
                )
            elif tree.exists(provider['parent_provider_uuid']):
                tree.new_child(
                    provider['name'],
                    provider['parent_provider_uuid'],
                    provider['uuid'],
                    provider['generation'],
                )
            else:
                continue
            tree.update_inventory(provider['uuid'], provider['inventories'])
            tree.update_traits(provider['uuid'], provider['traits'])
            tree.update_aggregates(provider['uuid'], provider['aggregates'])
        return tree

    def update(self, ctxt, startup=False):
        """Bring placement in line with the driver's view of the tree.
        True when that took a reshape.

        At startup, and when the copy of the tree is older than the
        refresh interval, the tree is read from placement; otherwise the
        copy stands for it."""
        if (
            not startup
            and self._tree is not None
            and self._fresh(self._tree_read_at)
        ):
            tree = self._tree.copy()
        else:
            tree = (
                self._unchanged_tree(ctxt)
                if not startup and self._refresh_interval() > 0
                else None
            )
            self._tree = None
            if tree is None:
                tree = self._read_tree(ctxt)
            self._tree_read_at = time.monotonic()
        before = tree.copy()
        allocations = None
        try:
            self.driver.update_provider_tree(tree, self.nodename)
        except exception.ReshapeNeeded:
            if not startup:
                raise
            LOG.info(
                'Reshaping the provider tree of %s at startup', self.nodename
            )
            allocations = self.placement.get_allocations_for_provider_tree(
                ctxt, self.node_uuid
            )
            tree = before.copy()
            self.driver.update_provider_tree(
                tree, self.nodename, allocations=allocations
            )
        self._tree = None  # until the writes went through
        if allocations is not None:
            self._reshape(ctxt, before, tree, allocations)
        else:
            self._flush(ctxt, before, tree)
            # Generations in the copy may be behind placement's (a write,
            # an allocation): a write sent with one costs a re-read and a
            # retry in the placement client, never a lost change.
            self._tree = tree.copy()
        self.root_inventory = tree.data(self.node_uuid).inventory
        return allocations is not None

    def _flush(self, ctxt, before, tree):
        """Write what changed, each write sending the generation the
        previous one returned (a race costs a read and a retry)."""
        self.placement.ensure_resource_classes(
            ctxt, {rc for p in tree.providers() for rc in p.inventory}
        )
        for provider in tree.providers():
            old = (
                before.data(provider.uuid)
                if before.exists(provider.uuid)
                else None
            )
            if old is None:
                generation = self.placement.ensure_resource_provider(
                    ctxt, provider.uuid, provider.name, provider.parent_uuid
                ).get('generation')
            else:
                generation = old.generation
            if old is None or _inventory_differs(
                old.inventory, provider.inventory
            ):
                generation = self.placement.set_inventory(
                    ctxt,
                    provider.uuid,
                    provider.inventory,
                    generation=generation,
                ).get('resource_provider_generation')
            if old is None or old.traits != provider.traits:
                generation = self.placement.set_traits(
                    ctxt, provider.uuid, provider.traits, generation=generation
                ).get('resource_provider_generation')
            # The copy then carries the generation placement gave the last
            # write, so the next refresh can tell nothing moved since.
            provider.generation = generation

    def _reshape(self, ctxt, before, tree, allocations):
        """One ``POST /reshaper``. Providers that existed are sent with the
        generation read *before* the allocations were gathered: anything
        that changed them since (a concurrent allocation, above all) makes
        placement refuse the whole reshape with a 409 instead of losing
        it. New providers go with the generation their creation gave."""
        self.placement.ensure_resource_classes(
            ctxt, {rc for p in tree.providers() for rc in p.inventory}
        )
        inventories = {}
        for provider in tree.providers():
            if before.exists(provider.uuid):
                generation = before.data(provider.uuid).generation
            else:
                generation = self.placement.ensure_resource_provider(
                    ctxt, provider.uuid, provider.name, provider.parent_uuid
                )['generation']
            inventories[provider.uuid] = {
                'resource_provider_generation': generation,
                'inventories': provider.inventory,
            }
        payload = {}
        for consumer, record in allocations.items():
            payload[consumer] = {
                'allocations': {
                    rp: {'resources': a['resources']}
                    for rp, a in record['allocations'].items()
                    if a['resources']
                },
                'project_id': record['project_id'],
                'user_id': record['user_id'],
                'consumer_generation': record['consumer_generation'],
                'consumer_type': record.get('consumer_type', 'INSTANCE'),
            }
        try:
            self.placement.reshape(ctxt, inventories, payload)
        except common_exc.PlacementError as exc:
            raise exception.ReshapeFailed(reason=str(exc)) from exc
        for provider in tree.providers():
            self.placement.set_traits(ctxt, provider.uuid, provider.traits)


def _inventory_differs(old, new):
    if set(old) != set(new):
        return True
    for rc, inv in new.items():
        for field in placement_client.INVENTORY_FIELDS:
            if field in inv and old[rc].get(field) != inv[field]:
                return True
    return False
