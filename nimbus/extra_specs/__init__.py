"""Flavor extra specs: the requirement grammar (:mod:`.ops`), CPU sets
(:mod:`.cpuset`) and the validators the compute API runs on every key.

A leaf package: the API validates with it and the scheduler's filters read
the same grammar, and it imports neither of them.


Validators come from the ``nimbus.api.extra_spec_validators`` entry points: each entry
point is a module with ``register() -> list[ExtraSpecValidator]`` (Nimbus registers its
own as ``nimbus``; a plugin such as an out-of-tree filter registers its keys the same
way). :func:`validate` raises :class:`ExtraSpecValidationError` for a key no validator
knows or a value its validator rejects. Unscoped keys (no ``:``) are free-form
requirements for AggregateInstanceExtraSpecsFilter / ComputeCapabilitiesFilter and only
need a well-formed operator expression.
"""

from __future__ import annotations

import threading

from oslo_log import log as logging
from stevedore import extension

from nimbus.extra_specs import validators as builtin
from nimbus.extra_specs.base import (
    ExtraSpecValidationError,
    ExtraSpecValidator,
)
from nimbus.extra_specs.ops import is_valid

__all__ = [
    'ExtraSpecValidationError',
    'ExtraSpecValidator',
    'validate',
    'validate_all',
    'validate_groups',
    'registry',
    'reset',
]

LOG = logging.getLogger(__name__)
NAMESPACE = 'nimbus.api.extra_spec_validators'

_lock = threading.Lock()
_registry: list[ExtraSpecValidator] | None = None


def _load() -> list[ExtraSpecValidator]:
    out = list(builtin.register())
    mgr = extension.ExtensionManager(
        NAMESPACE,
        invoke_on_load=False,
        on_load_failure_callback=lambda m, ep, e: LOG.warning(
            'extra spec validators %s failed to load: %s', ep, e
        ),
    )
    for ext in mgr:
        if ext.plugin is builtin:
            continue
        try:
            out.extend(ext.plugin.register())
        except Exception:
            LOG.exception(
                'extra spec validators %s failed to register', ext.name
            )
    return out


def registry() -> list[ExtraSpecValidator]:
    global _registry
    with _lock:
        if _registry is None:
            _registry = _load()
        return _registry


def reset() -> None:
    """Forget loaded validators (after installing a plugin)."""
    global _registry
    extension.ExtensionManager.ENTRY_POINT_CACHE.clear()
    try:  # stevedore >= 5 also caches entry points per interpreter
        from stevedore import _cache

        _cache._c._internal.clear()
    except (ImportError, AttributeError):  # pragma: no cover
        pass
    with _lock:
        _registry = None


def validate(key: str, value) -> None:
    """Raise ExtraSpecValidationError when ``key=value`` is unknown or malformed."""
    if ':' not in key and not any(v.matches(key) for v in registry()):
        if not is_valid(str(value)):
            raise ExtraSpecValidationError(
                f'{key}: {value!r} is not a valid requirement'
            )
        return
    for v in registry():
        if v.matches(key):
            v.validate(key, value)
            if v.name.startswith('resources{'):
                err = builtin.check_resource_class(key)
            elif v.name.startswith('trait{'):
                err = builtin.check_trait(key)
            else:
                err = None
            if err:
                raise ExtraSpecValidationError(err)
            return
    raise ExtraSpecValidationError(f'unknown extra spec {key}')


def validate_groups(extra_specs: dict) -> None:
    """Checks that span keys: every numbered or named request group with traits
    also asks for resources. Raises ExtraSpecValidationError."""
    err = builtin.check_request_groups(extra_specs)
    if err:
        raise ExtraSpecValidationError(err)


# Image properties the scheduler reads that mirror an ``hw:`` extra spec.
IMAGE_PROPERTIES = {
    'hw_cpu_policy': 'hw:cpu_policy',
    'hw_cpu_thread_policy': 'hw:cpu_thread_policy',
    'hw_emulator_threads_policy': 'hw:emulator_threads_policy',
    'hw_mem_page_size': 'hw:mem_page_size',
    'hw_pci_numa_affinity_policy': 'hw:pci_numa_affinity_policy',
    'hw_numa_nodes': 'hw:numa_nodes',
}


def validate_image_properties(properties: dict) -> None:
    """Image properties that stand for an ``hw:`` extra spec get the same check
    (Glance stores anything; the scheduler must not silently ignore a value)."""
    for prop, key in IMAGE_PROPERTIES.items():
        if prop in properties and properties[prop] is not None:
            try:
                validate(key, str(properties[prop]))
            except ExtraSpecValidationError as exc:
                raise ExtraSpecValidationError(
                    f'image property {prop}: ' + str(exc).split(': ', 1)[-1]
                ) from exc


def validate_all(extra_specs: dict) -> None:
    for key, value in extra_specs.items():
        validate(key, value)
    validate_groups(extra_specs)
