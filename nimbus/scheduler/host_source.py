"""Where the host manager's facts come from: the :class:`HostInfoSource`
protocol (the plain dicts each read returns; DB-backed in production, see
``db_source.py``) and :class:`InMemoryHostInfoSource` for tests, benchmarks
and the simulator.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class HostInfoSource(Protocol):
    """Where host facts come from. Every method returns plain dicts.

    * ``compute_nodes()`` -> ``[{"uuid", "host", "hypervisor_hostname", "cell_uuid",
      "vcpus", "vcpus_used", "memory_mb", "memory_mb_used", "local_gb", "local_gb_used",
      "cpu_allocation_ratio", "ram_allocation_ratio", "disk_allocation_ratio",
      "hypervisor_type", "hypervisor_version", "cpu_info", "host_ip",
      "supported_instances", "numa_topology", "pci_stats", "metrics", "stats",
      "num_io_ops", "failed_builds"}]`` (JSON columns may be dicts or strings)
    * ``services()`` -> ``[{"host", "binary", "disabled", "disabled_reason", "up",
      "forced_down"}]`` (compute services only are used)
    * ``aggregates()`` -> ``[{"id", "uuid", "name", "hosts": [..], "metadata": {..}}]``
    * ``instances_by_host()`` -> ``{host: [{"uuid", "flavor_id", "group_uuid",
      "image_ref", "image_properties"}]}``
    * ``server_groups()`` -> ``[{"uuid", "name", "policy", "rules", "members": [..]}]``
    * optional ``image_properties(image_ref)`` -> ``dict | None``: resolves an event's
      ``image_ref`` when it carries no ``image_properties``
    """

    def compute_nodes(self) -> list[dict]: ...

    def services(self) -> list[dict]: ...

    def aggregates(self) -> list[dict]: ...

    def instances_by_host(self) -> dict[str, list[dict]]: ...

    def server_groups(self) -> list[dict]: ...


class InMemoryHostInfoSource:
    """A HostInfoSource over plain lists, for tests and benchmarks."""

    def __init__(
        self,
        compute_nodes=(),
        services=(),
        aggregates=(),
        instances=None,
        server_groups=(),
        images=None,
    ):
        self._nodes = list(compute_nodes)
        self._services = list(services)
        self._aggregates = list(aggregates)
        self._instances = dict(instances or {})
        self._groups = list(server_groups)
        self._images = dict(images or {})  # image id -> properties

    def image_properties(self, image_ref):
        props = self._images.get(image_ref)
        return None if props is None else dict(props)

    def compute_nodes(self):
        return list(self._nodes)

    def services(self):
        return list(self._services)

    def aggregates(self):
        return list(self._aggregates)

    def instances_by_host(self):
        return {k: list(v) for k, v in self._instances.items()}

    def server_groups(self):
        return list(self._groups)
