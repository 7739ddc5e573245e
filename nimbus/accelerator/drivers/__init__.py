"""Accelerator drivers of the agent, loaded by stevedore.

A driver finds the devices of one host (:meth:`~base.AcceleratorDriver.
discover`) and programs or releases one of their attach handles for an
accelerator request. Drivers are entry points of the group
``nimbus.accelerator.drivers``; ``[accelerator_agent] enabled_drivers``
names those an agent loads. Nimbus ships two fakes
(:mod:`nimbus.accelerator.drivers.fake`): ``fake_fpga`` and ``fake_gpu``.
"""

import threading

from stevedore import named

NAMESPACE = 'nimbus.accelerator.drivers'


class DriverNotFound(ValueError):
    """An enabled driver name with no entry point behind it."""


# names (a tuple) -> [(name, driver class)]: the entry points are looked
# up once per process, not once per host (stevedore's manager per host
# was 5.6 ms under a profiler, and 1000 simulated hosts each loaded theirs).
_CLASSES = {}
_LOCK = threading.Lock()


def _classes(names):
    names = tuple(names)
    found = _CLASSES.get(names)
    if found is not None:
        return found
    missing = []

    def on_missing(names_missing):
        missing.extend(names_missing)

    manager = named.NamedExtensionManager(
        NAMESPACE,
        names,
        invoke_on_load=False,
        name_order=True,
        on_missing_entrypoints_callback=on_missing,
        propagate_map_exceptions=True,
        on_load_failure_callback=_reraise,
    )
    if missing:
        raise DriverNotFound(
            'accelerator driver(s) %s not found in entry point group %s'
            % (', '.join(sorted(missing)), NAMESPACE)
        )
    found = [(ext.name, ext.plugin) for ext in manager]
    with _LOCK:
        _CLASSES[names] = found
    return found


def load(conf, host, names):
    """The drivers called ``names`` for ``host``, in that order:
    ``[(name, driver)]``. Each is built as ``Driver(conf, host)``.

    Raises :class:`DriverNotFound` naming every missing driver, and lets
    an exception of a driver's constructor through (a broken driver stops
    the agent rather than hide its devices)."""
    return [(name, cls(conf, host)) for name, cls in _classes(names)]


def _reraise(manager, entrypoint, exc):
    raise exc
