"""An in-memory picture of a compute's resource provider tree.

The virt driver edits it in ``update_provider_tree``; the resource tracker
then writes the differences to placement (or, for a reshape, sends the whole
tree and the moved allocations to ``POST /reshaper`` in one call).
"""

import copy
import dataclasses


@dataclasses.dataclass
class ProviderData:
    uuid: str
    name: str
    parent_uuid: str | None
    generation: int | None = None
    inventory: dict = dataclasses.field(default_factory=dict)
    traits: set = dataclasses.field(default_factory=set)
    aggregates: set = dataclasses.field(default_factory=set)


def _copy_fields(fields):
    """One resource class's inventory fields (flat: a dict copy is
    enough; anything else is deep-copied)."""
    if isinstance(fields, dict) and not any(
        isinstance(v, (dict, list, set)) for v in fields.values()
    ):
        return dict(fields)
    return copy.deepcopy(fields)


class ProviderTree:
    def __init__(self):
        self._providers = {}

    def new_root(self, name, uuid, generation=None):
        self._providers[uuid] = ProviderData(uuid, name, None, generation)
        return uuid

    def new_child(self, name, parent_uuid, uuid, generation=None):
        if parent_uuid not in self._providers:
            raise ValueError('unknown parent %s' % parent_uuid)
        self._providers[uuid] = ProviderData(
            uuid, name, parent_uuid, generation
        )
        return uuid

    def remove(self, uuid):
        for child in [
            p.uuid for p in self._providers.values() if p.parent_uuid == uuid
        ]:
            self.remove(child)
        self._providers.pop(uuid, None)

    def exists(self, uuid):
        return uuid in self._providers

    def data(self, uuid):
        return self._providers[uuid]

    def find_by_name(self, name):
        for provider in self._providers.values():
            if provider.name == name:
                return provider
        return None

    def update_inventory(self, uuid, inventory):
        self._providers[uuid].inventory = {
            rc: _copy_fields(fields) for rc, fields in inventory.items()
        }

    def update_traits(self, uuid, traits):
        self._providers[uuid].traits = set(traits)

    def update_aggregates(self, uuid, aggregates):
        self._providers[uuid].aggregates = set(aggregates)

    def providers(self):
        """Parents before children."""
        ordered, seen = [], set()

        def visit(p):
            if p.uuid in seen:
                return
            if p.parent_uuid and p.parent_uuid in self._providers:
                visit(self._providers[p.parent_uuid])
            seen.add(p.uuid)
            ordered.append(p)

        for provider in self._providers.values():
            visit(provider)
        return ordered

    def copy(self):
        """A copy sharing nothing mutable with this tree. Field by field
        (an inventory is ``{resource class: {field: number or bool}}``):
        a periodic update copies the tree three times, and at a thousand
        simulated hosts ``copy.deepcopy`` of it was most of an idle
        update's CPU."""
        tree = ProviderTree()
        tree._providers = {
            uuid: ProviderData(
                p.uuid,
                p.name,
                p.parent_uuid,
                p.generation,
                {rc: _copy_fields(f) for rc, f in p.inventory.items()},
                set(p.traits),
                set(p.aggregates),
            )
            for uuid, p in self._providers.items()
        }
        return tree
