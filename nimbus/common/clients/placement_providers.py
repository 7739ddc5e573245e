"""The provider-tree half of the placement client: what a compute calls to
keep its providers, inventories, traits and aggregates in placement, and
the one retry of read-modify-write calls that lose a generation race.
:class:`~nimbus.common.clients.placement.PlacementClient` has these
methods (this class is its base)."""

import tenacity

from nimbus.common import exception

CONCURRENT_UPDATE = 'placement.concurrent_update'


def error_code(response):
    try:
        return response.json()['errors'][0].get('code')
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def error_detail(response):
    try:
        return response.json()['errors'][0].get('detail')
    except (ValueError, KeyError, IndexError, TypeError):
        return response.text[:500]


class ResourceProviderGenerationConflict(exception.PlacementConflict):
    pass


class _GenerationRace(Exception):
    """Internal: a read-modify-write lost a generation race (retried)."""


def _is_concurrent_update(response):
    return error_code(response) == CONCURRENT_UPDATE


def _raise(exc):
    raise exc


class ProviderTreeCalls:
    """Needs ``request``, ``_check``, ``retries``, ``_resource_classes``,
    ``_traits`` and ``_names_lock`` (PlacementClient has them)."""

    def _retrying_races(self, attempt, gave_up):
        """``attempt(n)`` (n = 0, 1, ...) until it returns; each
        :class:`_GenerationRace` it raises (a 409 that a fresh read may
        fix) is retried at once, up to ``retries`` times, and then
        ``gave_up`` (an exception) is raised. The one retry loop of the
        read-modify-write calls below."""
        tries = []

        @tenacity.retry(
            retry=tenacity.retry_if_exception_type(_GenerationRace),
            stop=tenacity.stop_after_attempt(self.retries + 1),
            retry_error_callback=lambda state: _raise(gave_up),
        )
        def run():
            tries.append(1)
            return attempt(len(tries) - 1)

        return run()

    def _written(self, response, ok, what, conflicts=None):
        """True for an ``ok`` answer; the client's error for a 4xx or 5xx
        other than a 409 that ``conflicts`` (default: placement's
        ``concurrent_update``) says a retry may fix; else _GenerationRace."""
        conflicts = conflicts or _is_concurrent_update
        if response.status_code == ok:
            return True
        if not (response.status_code == 409 and conflicts(response)):
            self._check(response, what)
        raise _GenerationRace(what)

    # -- provider trees (computes) -----------------------------------------

    def get_provider(self, ctxt, rp_uuid):
        response = self.request(
            ctxt, 'GET', '/resource_providers/%s' % rp_uuid
        )
        if response.status_code == 404:
            return None
        return self._check(response, 'provider %s' % rp_uuid).json()

    def provider_uuids(self, ctxt):
        """The uuids of every provider placement has (one listing)."""
        response = self.request(ctxt, 'GET', '/resource_providers')
        return {
            p['uuid']
            for p in self._check(response, 'providers').json()[
                'resource_providers'
            ]
        }

    def find_provider_by_name(self, ctxt, name):
        """The provider called ``name`` (a compute's root), or None."""
        response = self.request(
            ctxt, 'GET', '/resource_providers', params={'name': name}
        )
        providers = self._check(response, 'provider %s' % name).json()[
            'resource_providers'
        ]
        return providers[0] if providers else None

    def update_traits(self, ctxt, rp_uuid, add=(), remove=()):
        """Add and remove traits, keeping the provider's others."""
        self.ensure_traits(ctxt, add)

        def attempt(_n):
            provider = self.get_provider(ctxt, rp_uuid)
            current = set(
                self._check(
                    self.request(
                        ctxt, 'GET', '/resource_providers/%s/traits' % rp_uuid
                    ),
                    'traits',
                ).json()['traits']
            )
            wanted = (current | set(add)) - set(remove)
            if wanted == current:
                return
            self._written(
                self.request(
                    ctxt,
                    'PUT',
                    '/resource_providers/%s/traits' % rp_uuid,
                    json={
                        'traits': sorted(wanted),
                        'resource_provider_generation': provider['generation'],
                    },
                ),
                200,
                'traits of %s' % rp_uuid,
            )

        self._retrying_races(
            attempt,
            ResourceProviderGenerationConflict(
                'traits of %s kept changing' % rp_uuid
            ),
        )

    def ensure_resource_provider(
        self, ctxt, rp_uuid, name, parent_provider_uuid=None, expect_new=False
    ):
        """The provider, created when it does not exist yet (then the
        answer carries ``'created': True``). ``expect_new``: the caller
        has just not found it, so the creation is tried first (one
        request instead of a GET and a POST; an existing provider costs
        a 409 and the GET)."""
        if not expect_new:
            provider = self.get_provider(ctxt, rp_uuid)
            if provider is not None:
                return provider
        body = {'uuid': rp_uuid, 'name': name}
        if parent_provider_uuid:
            body['parent_provider_uuid'] = parent_provider_uuid
        response = self.request(ctxt, 'POST', '/resource_providers', json=body)
        if response.status_code == 409:
            # Created concurrently (or the name is taken by a stale
            # provider); the caller sees which on the next read.
            provider = self.get_provider(ctxt, rp_uuid)
            if provider is not None:
                return provider
        provider = self._check(response, 'creating provider %s' % name).json()
        provider['created'] = True
        return provider

    def provider_traits(self, ctxt, rp_uuid):
        """The trait names of one provider."""
        return self._check(
            self.request(
                ctxt, 'GET', '/resource_providers/%s/traits' % rp_uuid
            ),
            'traits of %s' % rp_uuid,
        ).json()['traits']

    def list_tree(self, ctxt, root_uuid):
        """Every provider of a tree as listed (uuid, name, generation,
        parent), in one request."""
        response = self.request(
            ctxt, 'GET', '/resource_providers', params={'in_tree': root_uuid}
        )
        return self._check(response, 'tree %s' % root_uuid).json()[
            'resource_providers'
        ]

    def get_provider_tree(self, ctxt, root_uuid, providers=None):
        """Every provider of a tree with inventories, traits, aggregates
        (``providers``: the tree's listing when the caller has it)."""
        if providers is None:
            providers = self.list_tree(ctxt, root_uuid)
        for provider in providers:
            uuid = provider['uuid']
            provider['inventories'] = self._check(
                self.request(
                    ctxt, 'GET', '/resource_providers/%s/inventories' % uuid
                ),
                'inventories',
            ).json()['inventories']
            provider['traits'] = self._check(
                self.request(
                    ctxt, 'GET', '/resource_providers/%s/traits' % uuid
                ),
                'traits',
            ).json()['traits']
            provider['aggregates'] = self._check(
                self.request(
                    ctxt, 'GET', '/resource_providers/%s/aggregates' % uuid
                ),
                'aggregates',
            ).json()['aggregates']
        return providers

    def _generation(self, ctxt, rp_uuid, generation, attempt):
        """The generation to send on try ``attempt``: ``generation`` (what
        the caller last saw) first when given, then a fresh read."""
        if attempt == 0 and generation is not None:
            return generation
        return self.get_provider(ctxt, rp_uuid)['generation']

    def set_inventory(self, ctxt, rp_uuid, inventories, generation=None):
        """Replace a provider's inventory, retrying generation races.

        ``generation``: the provider generation the caller last saw; the
        first PUT uses it without reading the provider (a race costs one
        more round). Returns placement's answer (with the new
        ``resource_provider_generation``).
        """

        def attempt(n):
            body = {
                'resource_provider_generation': self._generation(
                    ctxt, rp_uuid, generation, n
                ),
                'inventories': inventories,
            }
            response = self.request(
                ctxt,
                'PUT',
                '/resource_providers/%s/inventories' % rp_uuid,
                json=body,
            )
            self._written(response, 200, 'inventory of %s' % rp_uuid)
            return response.json()

        return self._retrying_races(
            attempt,
            ResourceProviderGenerationConflict(
                'inventory of %s kept changing' % rp_uuid
            ),
        )

    def ensure_resource_classes(self, ctxt, resource_classes):
        """Create the custom resource classes among ``resource_classes``
        that placement may not know (``PUT /resource_classes/{name}``,
        idempotent). Standard classes are placement's own; a class this
        client created or found once is not asked for again."""
        self._create_names(
            ctxt, resource_classes, self._resource_classes, '/resource_classes'
        )

    def ensure_traits(self, ctxt, traits):
        """Create the custom traits among ``traits`` (``PUT
        /traits/{name}``, idempotent). As for resource classes, a trait
        this client created once is not asked for again: the hosts of a
        process share one client, and each host's report used to send a
        PUT per custom trait of every provider it wrote."""
        self._create_names(ctxt, traits, self._traits, '/traits')

    def _create_names(self, ctxt, names, known, collection):
        """PUT ``collection/<name>`` for each custom name of ``names`` not
        in ``known`` (a set of this client's), then remember it. The
        hosts of a process starting together would each create the same
        names: one thread creates them while the others wait."""
        missing = {n for n in names if n.startswith('CUSTOM_')} - known
        if not missing:
            return
        with self._names_lock:
            for name in sorted(missing - known):
                self._check(
                    self.request(ctxt, 'PUT', '%s/%s' % (collection, name)),
                    '%s %s' % (collection[1:], name),
                )
                known.add(name)

    def set_traits(self, ctxt, rp_uuid, traits, generation=None):
        """Replace a provider's traits (``generation`` as for
        :meth:`set_inventory`); returns placement's answer. A 400 (a
        trait deleted since this client created it) makes the next call
        create the traits again."""
        self.ensure_traits(ctxt, traits)

        def attempt(n):
            response = self.request(
                ctxt,
                'PUT',
                '/resource_providers/%s/traits' % rp_uuid,
                json={
                    'traits': sorted(traits),
                    'resource_provider_generation': self._generation(
                        ctxt, rp_uuid, generation, n
                    ),
                },
            )
            if response.status_code == 400:
                self._traits.difference_update(traits)
            self._written(response, 200, 'traits of %s' % rp_uuid)
            return response.json()

        return self._retrying_races(
            attempt,
            ResourceProviderGenerationConflict(
                'traits of %s kept changing' % rp_uuid
            ),
        )

    def set_aggregates(self, ctxt, rp_uuid, aggregates):
        def attempt(_n):
            provider = self.get_provider(ctxt, rp_uuid)
            self._written(
                self.request(
                    ctxt,
                    'PUT',
                    '/resource_providers/%s/aggregates' % rp_uuid,
                    json={
                        'aggregates': sorted(aggregates),
                        'resource_provider_generation': provider['generation'],
                    },
                ),
                200,
                'aggregates of %s' % rp_uuid,
            )

        self._retrying_races(
            attempt,
            ResourceProviderGenerationConflict(
                'aggregates of %s kept changing' % rp_uuid
            ),
        )

    def get_allocations_for_provider_tree(self, ctxt, root_uuid):
        """Every allocation of every consumer of a local provider tree.

        As in the reshaper design: find the consumers through each local
        provider, then read each consumer's whole allocation (which may
        include sharing providers outside the tree).
        """
        response = self.request(
            ctxt, 'GET', '/resource_providers', params={'in_tree': root_uuid}
        )
        providers = self._check(response, 'tree').json()['resource_providers']
        consumers = set()
        for provider in providers:
            allocs = self._check(
                self.request(
                    ctxt,
                    'GET',
                    '/resource_providers/%s/allocations' % provider['uuid'],
                ),
                'provider allocations',
            ).json()
            consumers.update(allocs['allocations'])
        return {
            c: self.get_allocations_for_consumer(ctxt, c)
            for c in sorted(consumers)
        }

    def reshape(self, ctxt, inventories, allocations):
        """POST /reshaper. Raises PlacementConflict (with error_code)."""
        response = self.request(
            ctxt,
            'POST',
            '/reshaper',
            json={'inventories': inventories, 'allocations': allocations},
        )
        if response.status_code == 204:
            return
        self._check(response, 'reshape')
