"""Validators for the extra specs Nimbus itself reads (registered through the
``nimbus.api.extra_spec_validators`` entry point ``nimbus``)."""

from __future__ import annotations

import os_resource_classes
import os_traits

from nimbus.api.extra_specs.base import ExtraSpecValidator
from nimbus.scheduler.filters.extra_specs_ops import is_valid
from nimbus.scheduler.host_state import HostState

GROUP = {"name": "group", "pattern": r"([1-9][0-9]*|_[A-Za-z0-9_-]{1,63})?"}
ANY = {"name": "key", "pattern": r".+"}
N = {"name": "n", "pattern": r"[0-9]+"}


def _op(value):
    return None if is_valid(value) else f"{value!r} is not a valid requirement"


def _rc(key):
    return key


def _cpu_spec(value):
    from nimbus.scheduler import numa
    try:
        numa.parse_cpu_spec(value)
    except ValueError as exc:
        return str(exc)
    return None


def _pci_alias(value):
    for part in value.split(","):
        name, _, count = part.strip().partition(":")
        if not name or (count and not count.isdigit()):
            return f"{value!r} must look like 'alias:count[,alias:count]'"
    return None


def register() -> list[ExtraSpecValidator]:
    return [
        ExtraSpecValidator("hw:numa_nodes", "NUMA nodes of the guest", {"type": int, "min": 1}),
        ExtraSpecValidator("hw:cpu_policy", "CPU pinning policy",
                           {"enum": ["shared", "dedicated", "mixed"]}),
        ExtraSpecValidator("hw:cpu_thread_policy", "SMT placement of pinned CPUs",
                           {"enum": ["prefer", "isolate", "require"]}),
        ExtraSpecValidator("hw:numa_cpus.{n}", "guest CPUs of NUMA node N",
                           {"validate": _cpu_spec}, [N]),
        ExtraSpecValidator("hw:numa_mem.{n}", "MB of NUMA node N", {"type": int, "min": 0}, [N]),
        ExtraSpecValidator("hw:mem_page_size", "page size",
                           {"pattern": r"(small|large|any|[0-9]+[kKmMgG]?[bB]?)"}),
        ExtraSpecValidator("hw:emulator_threads_policy", "", {"enum": ["share", "isolate"]}),
        ExtraSpecValidator("hw:pci_numa_affinity_policy", "",
                           {"enum": ["required", "preferred", "legacy", "socket"]}),
        ExtraSpecValidator("hw:cpu_realtime", "", {"type": bool}),
        ExtraSpecValidator("hw:cpu_realtime_mask", "", {"type": str}),
        ExtraSpecValidator("resources{group}:{rc}", "resource amount for a request group",
                           {"type": int, "min": 0},
                           [GROUP, {"name": "rc", "pattern": r"[A-Z0-9_]+"}]),
        ExtraSpecValidator("trait{group}:{trait}", "required or forbidden trait",
                           {"enum": ["required", "forbidden"]},
                           [GROUP, {"name": "trait", "pattern": r"[A-Z0-9_]+"}]),
        ExtraSpecValidator("group_policy", "how numbered groups share providers",
                           {"enum": ["none", "isolate"]}),
        ExtraSpecValidator("pci_passthrough:alias", "PCI devices by alias",
                           {"validate": _pci_alias}),
        ExtraSpecValidator("accel:device_profile", "accelerator device profile name"),
        ExtraSpecValidator("capabilities:{key}", "ComputeCapabilitiesFilter requirement",
                           {"validate": _op}, [ANY]),
        ExtraSpecValidator("aggregate_instance_extra_specs:{key}",
                           "AggregateInstanceExtraSpecsFilter requirement",
                           {"validate": _op}, [ANY]),
        ExtraSpecValidator("quota:{key}", "hypervisor quota tuning", {"type": str}, [ANY]),
        ExtraSpecValidator("hw_rng:{key}", "random number generator settings", {}, [ANY]),
        ExtraSpecValidator("os:{key}", "guest OS settings", {}, [ANY]),
    ]


def check_resource_class(key: str) -> str | None:
    rc = key.split(":", 1)[1]
    if rc in os_resource_classes.STANDARDS or rc.startswith("CUSTOM_"):
        return None
    return f"unknown resource class {rc}"


def check_trait(key: str) -> str | None:
    trait = key.split(":", 1)[1]
    if os_traits.is_custom(trait) or trait in os_traits.get_traits():
        return None
    return f"unknown trait {trait}"


HOST_ATTRIBUTES = frozenset(HostState.__slots__)
