"""Validators for the extra specs Nimbus itself reads (registered through the
``nimbus.api.extra_spec_validators`` entry point ``nimbus``). Only the
standard names and the requirement grammar are imported: the API and the
scheduler both read this package, and it reads neither."""

from __future__ import annotations

import re

import os_resource_classes
import os_traits

from nimbus.extra_specs import cpuset
from nimbus.extra_specs.base import ExtraSpecValidator
from nimbus.extra_specs.ops import is_valid

GROUP = {'name': 'group', 'pattern': r'([1-9][0-9]*|_[A-Za-z0-9_-]{1,63})?'}
ANY = {'name': 'key', 'pattern': r'.+'}
N = {'name': 'n', 'pattern': r'[0-9]+'}


def _op(value):
    return None if is_valid(value) else f'{value!r} is not a valid requirement'


def _rc(key):
    return key


def _cpu_spec(value):
    try:
        cpuset.parse_cpu_spec(value)
    except ValueError as exc:
        return str(exc)
    return None


def implemented(*values):
    """A value check for keys whose other (Nova) values the scheduler does not
    implement: those are refused rather than silently treated as the default."""

    def check(value):
        if value not in values:
            return (
                f'{value!r} is not implemented by the Nimbus scheduler '
                f'(it implements {", ".join(values)})'
            )
        return None

    return check


def _pci_alias(value):
    for part in value.split(','):
        name, _, count = part.strip().partition(':')
        if not name or (count and not count.isdigit()):
            return f"{value!r} must look like 'alias:count[,alias:count]'"
    return None


def register() -> list[ExtraSpecValidator]:
    return [
        ExtraSpecValidator(
            'hw:numa_nodes', 'NUMA nodes of the guest', {'type': int, 'min': 1}
        ),
        ExtraSpecValidator(
            'hw:cpu_policy',
            'CPU pinning policy',
            {
                'enum': ['shared', 'dedicated', 'mixed'],
                'validate': implemented('shared', 'dedicated'),
            },
        ),
        ExtraSpecValidator(
            'hw:cpu_thread_policy',
            'SMT placement of pinned CPUs',
            {
                'enum': ['prefer', 'isolate', 'require'],
                'validate': implemented('prefer'),
            },
        ),
        ExtraSpecValidator(
            'hw:numa_cpus.{n}',
            'guest CPUs of NUMA node N',
            {'validate': _cpu_spec},
            [N],
        ),
        ExtraSpecValidator(
            'hw:numa_mem.{n}',
            'MB of NUMA node N',
            {'type': int, 'min': 0},
            [N],
        ),
        ExtraSpecValidator(
            'hw:mem_page_size',
            'page size',
            {
                'pattern': r'(small|large|any|[0-9]+[kKmMgG]?[bB]?)',
                'validate': implemented('small', 'any'),
            },
        ),
        ExtraSpecValidator(
            'hw:emulator_threads_policy',
            '',
            {'enum': ['share', 'isolate'], 'validate': implemented('share')},
        ),
        ExtraSpecValidator(
            'hw:pci_numa_affinity_policy',
            '',
            {
                'enum': ['required', 'preferred', 'legacy', 'socket'],
                'validate': implemented('preferred'),
            },
        ),
        ExtraSpecValidator('hw:cpu_realtime', '', {'type': bool}),
        ExtraSpecValidator('hw:cpu_realtime_mask', '', {'type': str}),
        ExtraSpecValidator(
            'resources{group}:{rc}',
            'resource amount for a request group',
            {'type': int, 'min': 0},
            [GROUP, {'name': 'rc', 'pattern': r'[A-Z0-9_]+'}],
        ),
        ExtraSpecValidator(
            'trait{group}:{trait}',
            'required or forbidden trait',
            {'enum': ['required', 'forbidden']},
            [GROUP, {'name': 'trait', 'pattern': r'[A-Z0-9_]+'}],
        ),
        ExtraSpecValidator(
            'group_policy',
            'how numbered groups share providers',
            {'enum': ['none', 'isolate']},
        ),
        ExtraSpecValidator(
            'pci_passthrough:alias',
            'PCI devices by alias',
            {'validate': _pci_alias},
        ),
        ExtraSpecValidator(
            'accel:device_profile', 'accelerator device profile name'
        ),
        ExtraSpecValidator(
            'capabilities:{key}',
            'ComputeCapabilitiesFilter requirement',
            {'validate': _op},
            [ANY],
        ),
        ExtraSpecValidator(
            'aggregate_instance_extra_specs:{key}',
            'AggregateInstanceExtraSpecsFilter requirement',
            {'validate': _op},
            [ANY],
        ),
        ExtraSpecValidator(
            'quota:{key}', 'hypervisor quota tuning', {'type': str}, [ANY]
        ),
        ExtraSpecValidator(
            'hw_rng:{key}', 'random number generator settings', {}, [ANY]
        ),
        ExtraSpecValidator('os:{key}', 'guest OS settings', {}, [ANY]),
    ]


_GROUP_KEY = re.compile(
    r'^(resources|trait)([1-9][0-9]*|_[A-Za-z0-9_-]{1,63}):([A-Z0-9_]+)$'
)


def check_request_groups(extra_specs: dict) -> str | None:
    """A numbered (or named) request group needs resources: placement ignores a
    ``trait1:X=required`` whose group asks for no ``resources1:RC``, so the trait
    would silently not apply. Returns an error message or None."""
    amounts, traits = {}, {}
    for key, value in extra_specs.items():
        m = _GROUP_KEY.match(key)
        if not m:
            continue
        kind, suffix = m.group(1), m.group(2)
        if kind == 'resources':
            try:
                amounts[suffix] = amounts.get(suffix, 0) + int(value)
            except (TypeError, ValueError):
                amounts.setdefault(suffix, 0)
        else:
            traits.setdefault(suffix, []).append(key)
    for suffix in sorted(traits):
        if not amounts.get(suffix):
            keys = ', '.join(sorted(traits[suffix]))
            return (
                f'{keys}: request group {suffix.lstrip("_")} has traits but no '
                f'resources; add resources{suffix}:<RESOURCE_CLASS>=<amount> '
                f'(placement ignores a group without resources)'
            )
    return None


def check_resource_class(key: str) -> str | None:
    rc = key.split(':', 1)[1]
    if rc in os_resource_classes.STANDARDS or rc.startswith('CUSTOM_'):
        return None
    return f'unknown resource class {rc}'


def check_trait(key: str) -> str | None:
    trait = key.split(':', 1)[1]
    if os_traits.is_custom(trait) or trait in os_traits.get_traits():
        return None
    return f'unknown trait {trait}'
