"""Reporting one host's devices to placement.

Each device becomes one child provider of the compute node's root
provider (found by name: the root is named after the host, as the
compute's resource tracker names it; the agent never imports the
compute). A device's provider has

- the uuid of its deployable's ``rp_uuid`` (derived from host and device,
  see :mod:`nimbus.accelerator.drivers.base`),
- the name ``<host>_<driver>_<index>`` (the deployable's name),
- an inventory of its driver's resource class, ``total`` =
  ``num_accelerators``,
- the ownership trait :data:`OWNER_TRAIT` plus the driver's vendor and
  product traits (custom traits are created when missing).

A report reads what placement has and writes only the differences: a
second report of the same devices sends no write at all. A provider whose
generation has not moved since the reporter last saw it is not read again,
so a steady report costs two GETs per host (the root by name, the owned
providers of its tree). Providers that
carry the ownership trait in the host's tree but belong to no discovered
device are deleted - unless they hold allocations, in which case they are
kept (and logged) until their consumers are gone. The compute's resource
tracker leaves children it does not know alone, so both can share the
tree.
"""

import dataclasses

from oslo_log import log as logging

from nimbus.common.clients import placement as placement_client
from nimbus.common import exception
from nimbus.common import host_batches

LOG = logging.getLogger(__name__)

OWNER_TRAIT = 'CUSTOM_OWNER_NIMBUS_ACCELERATOR'


class RootProviderNotFound(Exception):
    """The compute node's provider does not exist (yet)."""

    def __init__(self, host):
        super().__init__(
            'no resource provider named %s in placement (the '
            'compute of that host has not reported yet)' % host
        )
        self.host = host


@dataclasses.dataclass(frozen=True)
class DeviceProvider:
    """What placement should hold for one device."""

    uuid: str
    name: str
    resource_class: str
    total: int
    traits: frozenset

    @property
    def inventory(self):
        return {
            self.resource_class: {
                'total': self.total,
                'reserved': 0,
                'min_unit': 1,
                'max_unit': self.total,
                'step_size': 1,
                'allocation_ratio': 1.0,
            }
        }


def providers_of(driver, devices):
    """The :class:`DeviceProvider` of every deployable of ``devices``
    (found by ``driver``)."""
    result = []
    for device in devices:
        traits = frozenset(driver.traits(device) | {OWNER_TRAIT})
        for deployable in device['deployables']:
            result.append(
                DeviceProvider(
                    uuid=deployable['rp_uuid'],
                    name=deployable['name'],
                    resource_class=driver.resource_class,
                    total=int(deployable['num_accelerators']),
                    traits=traits,
                )
            )
    return result


@dataclasses.dataclass
class ReportResult:
    """What a report did: provider uuids created, updated (inventory or
    traits rewritten), removed, and kept although their device is gone
    (they hold allocations)."""

    root: str
    created: list = dataclasses.field(default_factory=list)
    updated: list = dataclasses.field(default_factory=list)
    removed: list = dataclasses.field(default_factory=list)
    kept: list = dataclasses.field(default_factory=list)

    @property
    def changed(self):
        return bool(self.created or self.updated or self.removed)


def read_trees(ctxt, placement, hosts):
    """What the first reports of ``hosts`` need, in two listings for all
    of them: ``{host: (root uuid, {uuid: owned provider})}`` for every
    host whose root provider exists (hosts without one are left out:
    their reports ask, and wait for the compute).

    One listing per host and two per report made each host's start a
    full round trip chain through placement, two of them listings of
    providers that placement answers from its snapshot of every
    provider; the agents of 1000 simulated hosts paid them 2000 times.
    """
    placement.ensure_traits(ctxt, [OWNER_TRAIT])
    wanted = set(hosts)
    providers = _json(
        placement.request(ctxt, 'GET', '/resource_providers'), 'providers'
    )['resource_providers']
    roots = {
        p['name']: p['uuid']
        for p in providers
        if p['name'] in wanted and not p.get('parent_provider_uuid')
    }
    owned = _json(
        placement.request(
            ctxt,
            'GET',
            '/resource_providers',
            params={'required': OWNER_TRAIT},
        ),
        'device providers',
    )['resource_providers']
    trees = {uuid: {} for uuid in roots.values()}
    for provider in owned:
        tree = trees.get(provider['root_provider_uuid'])
        if tree is not None:
            tree[provider['uuid']] = provider
    return {host: (uuid, trees[uuid]) for host, uuid in roots.items()}


# Hosts whose new device providers go in one write (one transaction).
WRITE_BATCH = 250


def write_new(ctxt, placement, trees, entries):
    """Create the device providers of many hosts whose trees hold none
    yet, in a few writes: ``entries`` is ``[(PlacementReporter, root
    uuid, [DeviceProvider])]``, ``trees(providers) -> {uuid: generation}``
    a bulk writer of placement (:func:`nimbus.placement.direct.
    tree_writer`, in the all-in-one) and ``placement`` the client that
    creates the custom resource classes and traits first. Each reporter
    then takes what was written as its next report's reading
    (:meth:`PlacementReporter.hint` and its generations), so that report
    writes nothing. A batch that fails is logged; its hosts' reports
    create their own providers, one request at a time."""
    everything = [p for _r, _root, providers in entries for p in providers]
    try:
        placement.ensure_resource_classes(
            ctxt, {p.resource_class for p in everything}
        )
        placement.ensure_traits(
            ctxt, {t for p in everything for t in p.traits}
        )
    except exception.PlacementError as exc:
        host_batches.failed(
            LOG,
            'Creating the device resource classes and traits',
            len(entries),
            exc,
            'reports its own devices',
        )
        return
    for batch, generations in host_batches.sent(
        entries,
        WRITE_BATCH,
        lambda batch: trees(
            placement_client.new_provider(p, root)
            for _r, root, providers in batch
            for p in providers
        ),
        LOG,
        'Writing the device providers',
        'reports its own',
    ):
        for reporter, root, providers in batch:
            reporter.written(root, providers, generations)


def _json(response, what):
    if response.status_code >= 400:
        raise exception.PlacementError(
            reason='%s: %s %s'
            % (
                what,
                response.status_code,
                placement_client.error_detail(response),
            )
        )
    return response.json() if response.content else None


def _inventory_differs(have, want):
    if set(have) != set(want):
        return True
    return any(
        have[rc].get(field) != inv[field]
        for rc, inv in want.items()
        for field in placement_client.INVENTORY_FIELDS
    )


class PlacementReporter:
    """Reports the device providers of ``host`` through ``placement`` (a
    :class:`nimbus.common.clients.placement.PlacementClient`)."""

    def __init__(self, placement, host):
        self.placement = placement
        self.host = host
        # uuid -> (generation, DeviceProvider) placement held after our
        # last look: an unchanged generation means nothing to read again.
        self._seen = {}
        # (root uuid, {uuid: provider}) read for many hosts at once
        # (:func:`read_trees`), used by the next report instead of its
        # two listings.
        self._hint = None

    def hint(self, root, owned):
        """The next report takes ``root`` and ``owned`` (what
        :meth:`root_uuid` and :meth:`owned` would answer, read for many
        hosts in one go) instead of asking placement."""
        self._hint = (root, owned)

    def written(self, root, providers, generations):
        """``providers`` (DeviceProvider) were created under ``root``
        with their inventories and traits, at ``generations`` (``{uuid:
        generation}``), by a write for many hosts (:func:`write_new`):
        the next report reads them from here and, when the devices are
        the same, writes nothing."""
        owned = {}
        for provider in providers:
            generation = generations[provider.uuid]
            owned[provider.uuid] = {
                'uuid': provider.uuid,
                'name': provider.name,
                'generation': generation,
                'parent_provider_uuid': root,
                'root_provider_uuid': root,
            }
            self._seen[provider.uuid] = (generation, provider)
        self.hint(root, owned)

    def _ensure_owner_trait(self, ctxt):
        """The ownership trait exists (created once per placement client,
        which the hosts of a process share): placement refuses to filter
        by a trait it does not know."""
        self.placement.ensure_traits(ctxt, [OWNER_TRAIT])

    def _get(self, ctxt, path, what, params=None):
        response = self.placement.request(ctxt, 'GET', path, params=params)
        return _json(response, what)

    def root_uuid(self, ctxt):
        """The uuid of the provider named after the host; raises
        :class:`RootProviderNotFound`."""
        root = self.placement.find_provider_by_name(ctxt, self.host)
        if root is None:
            raise RootProviderNotFound(self.host)
        if root.get('parent_provider_uuid'):
            raise exception.PlacementError(
                reason='provider %s named %s is not a root provider'
                % (root['uuid'], self.host)
            )
        return root['uuid']

    def owned(self, ctxt, root):
        """The providers of ``root``'s tree with the ownership trait:
        ``{uuid: provider}``."""
        found = self._get(
            ctxt,
            '/resource_providers',
            'device providers',
            params={'in_tree': root, 'required': OWNER_TRAIT},
        )
        return {p['uuid']: p for p in found['resource_providers']}

    def report(self, ctxt, providers):
        """Make placement hold exactly ``providers`` (DeviceProvider) as
        the agent's children of the host's root; returns a
        :class:`ReportResult`. Raises RootProviderNotFound, and
        PlacementError when placement fails (the caller tries later).
        A provider whose inventory placement refuses (allocations above a
        shrunk total) is logged and left as it is."""
        hint, self._hint = self._hint, None
        if hint is not None:
            root, owned = hint
        else:
            root = self.root_uuid(ctxt)
            self._ensure_owner_trait(ctxt)
            owned = self.owned(ctxt, root)
        result = ReportResult(root)
        wanted = {p.uuid: p for p in providers}
        self._ensure_classes(ctxt, providers)
        for provider in providers:
            try:
                self._report_one(
                    ctxt, root, provider, owned.get(provider.uuid), result
                )
            except exception.PlacementConflict as exc:
                LOG.warning(
                    'Device provider %s (%s) of %s left as it is: %s',
                    provider.name,
                    provider.uuid,
                    self.host,
                    exc,
                )
        for uuid, provider in sorted(owned.items()):
            if uuid not in wanted and uuid != root:
                self._remove(ctxt, provider, result)
        if result.changed or result.kept:
            LOG.info(
                'Device providers of %s: %d created, %d updated, %d '
                'removed, %d kept while allocated',
                self.host,
                len(result.created),
                len(result.updated),
                len(result.removed),
                len(result.kept),
            )
        return result

    def _ensure_classes(self, ctxt, providers):
        self.placement.ensure_resource_classes(
            ctxt, {p.resource_class for p in providers}
        )

    def _report_one(self, ctxt, root, provider, current, result):
        if current is None:
            current = self.placement.ensure_resource_provider(
                ctxt, provider.uuid, provider.name, root, expect_new=True
            )
            if current.get('created'):
                result.created.append(provider.uuid)
            elif current.get('parent_provider_uuid') != root:
                LOG.error(
                    'Provider %s of device %s is not a child of %s; '
                    'not reporting it',
                    provider.uuid,
                    provider.name,
                    self.host,
                )
                return
        generation = current['generation']
        uuid = provider.uuid
        if self._seen.get(uuid) == (generation, provider):
            return
        self._seen.pop(uuid, None)
        if current.get('created'):
            # Just created: nothing to read.
            inventories, traits = {}, set()
        else:
            inventories = self._get(
                ctxt,
                '/resource_providers/%s/inventories' % uuid,
                'inventories of %s' % uuid,
            )['inventories']
            traits = set(
                self._get(
                    ctxt,
                    '/resource_providers/%s/traits' % uuid,
                    'traits of %s' % uuid,
                )['traits']
            )
        touched = False
        if _inventory_differs(inventories, provider.inventory):
            generation = self.placement.set_inventory(
                ctxt, uuid, provider.inventory, generation=generation
            )['resource_provider_generation']
            touched = True
        if traits != provider.traits:
            generation = self.placement.set_traits(
                ctxt, uuid, provider.traits, generation=generation
            )['resource_provider_generation']
            touched = True
        if touched and uuid not in result.created:
            result.updated.append(uuid)
        self._seen[uuid] = (generation, provider)

    def _remove(self, ctxt, provider, result):
        uuid = provider['uuid']
        allocations = self._get(
            ctxt,
            '/resource_providers/%s/allocations' % uuid,
            'allocations of %s' % uuid,
        )['allocations']
        if allocations:
            LOG.warning(
                'Device provider %s (%s) of %s is gone from the '
                'host but holds allocations of %s; keeping it',
                provider['name'],
                uuid,
                self.host,
                ', '.join(sorted(allocations)),
            )
            result.kept.append(uuid)
            return
        response = self.placement.request(
            ctxt, 'DELETE', '/resource_providers/%s' % uuid
        )
        if response.status_code in (204, 404):
            self._seen.pop(uuid, None)
            LOG.info(
                'Removed the provider %s (%s) of a device gone from %s',
                provider['name'],
                uuid,
                self.host,
            )
            result.removed.append(uuid)
            return
        if response.status_code == 409:
            # Allocated (or given a child) since we looked.
            LOG.warning(
                'Device provider %s of %s not removed: %s',
                uuid,
                self.host,
                response.text[:300],
            )
            result.kept.append(uuid)
            return
        _json(response, 'removing provider %s' % uuid)
