"""Flavor extra spec validation, delegated to :mod:`nimbus.api.extra_specs`.

The scheduler owner writes that package (validators registered through the
``nimbus.api.extra_spec_validators`` entry points). This module is the one
place the API calls: :func:`validate` looks for a ``validate(key, value)``
function in that package (or its ``validators`` module) and turns whatever
it raises into a 400. Until the package exists, a small built-in check of
the namespaces the scheduler reads is used.
"""

import importlib
import re

import os_resource_classes
import os_traits

_CANDIDATES = (('nimbus.api.extra_specs', 'validate'),
               ('nimbus.api.extra_specs.validators', 'validate'),
               ('nimbus.api.extra_specs', 'validate_extra_spec'))


class InvalidExtraSpec(Exception):
    pass


def _delegate():
    for module_name, attr in _CANDIDATES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        func = getattr(module, attr, None)
        if callable(func):
            return func
    return None


_RESOURCES = re.compile(r'^resources([1-9][0-9]*|_[a-zA-Z0-9_-]+)?:(.+)$')
_TRAIT = re.compile(r'^trait([1-9][0-9]*|_[a-zA-Z0-9_-]+)?:(.+)$')
_HW_KNOWN = {'hw:cpu_policy': ('dedicated', 'shared'),
             'hw:cpu_thread_policy': ('prefer', 'isolate', 'require'),
             'hw:mem_page_size': None, 'hw:numa_nodes': 'int',
             'hw:cpu_realtime': None, 'hw:cpu_realtime_mask': None,
             'hw:emulator_threads_policy': ('share', 'isolate'),
             'hw:pci_numa_affinity_policy': ('required', 'preferred',
                                             'legacy', 'socket')}


def _builtin(key, value):
    match = _RESOURCES.match(key)
    if match:
        rc = match.group(2)
        if rc not in os_resource_classes.STANDARDS and \
                not rc.startswith('CUSTOM_'):
            raise InvalidExtraSpec('unknown resource class %s' % rc)
        if not str(value).isdigit():
            raise InvalidExtraSpec('%s must be a non-negative integer' % key)
        return
    match = _TRAIT.match(key)
    if match:
        trait = match.group(2)
        if not os_traits.is_custom(trait) and trait not in os_traits.get_traits():
            raise InvalidExtraSpec('unknown trait %s' % trait)
        if value not in ('required', 'forbidden'):
            raise InvalidExtraSpec("%s must be 'required' or 'forbidden'"
                                   % key)
        return
    if key.startswith('hw:'):
        if key.startswith('hw:numa_cpus.') or key.startswith('hw:numa_mem.'):
            return
        if key not in _HW_KNOWN:
            raise InvalidExtraSpec('unknown extra spec %s' % key)
        allowed = _HW_KNOWN[key]
        if allowed == 'int' and not str(value).isdigit():
            raise InvalidExtraSpec('%s must be an integer' % key)
        if isinstance(allowed, tuple) and value not in allowed:
            raise InvalidExtraSpec('%s must be one of %s'
                                   % (key, ', '.join(allowed)))
    if key == 'group_policy' and value not in ('none', 'isolate'):
        raise InvalidExtraSpec("group_policy must be 'none' or 'isolate'")


def validate(key, value):
    """Raise :class:`InvalidExtraSpec` when ``key=value`` is not valid."""
    func = _delegate()
    if func is None:
        return _builtin(key, value)
    try:
        result = func(key, value)
    except InvalidExtraSpec:
        raise
    except Exception as exc:  # the validator's own error type
        raise InvalidExtraSpec(str(exc) or exc.__class__.__name__)
    if result is False:
        raise InvalidExtraSpec('invalid extra spec %s=%s' % (key, value))


def validate_groups(extra_specs):
    """Checks that span keys (a numbered trait group needs resources), on the
    flavor's extra specs as they would be after a change. Raises
    :class:`InvalidExtraSpec`."""
    try:
        from nimbus.api import extra_specs as package
    except ImportError:  # pragma: no cover - the package ships with Nimbus
        return
    try:
        package.validate_groups(dict(extra_specs))
    except Exception as exc:
        raise InvalidExtraSpec(str(exc) or exc.__class__.__name__)
