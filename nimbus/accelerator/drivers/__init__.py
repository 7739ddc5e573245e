"""Accelerator drivers of the agent, loaded by stevedore.

A driver finds the devices of one host (:meth:`~base.AcceleratorDriver.
discover`) and programs or releases one of their attach handles for an
accelerator request. Drivers are entry points of the group
``nimbus.accelerator.drivers``; ``[accelerator_agent] enabled_drivers``
names those an agent loads. Nimbus ships two fakes
(:mod:`nimbus.accelerator.drivers.fake`): ``fake_fpga`` and ``fake_gpu``.
"""

from stevedore import named

NAMESPACE = 'nimbus.accelerator.drivers'


class DriverNotFound(ValueError):
    """An enabled driver name with no entry point behind it."""


def load(conf, host, names):
    """The drivers called ``names`` for ``host``, in that order:
    ``[(name, driver)]``. Each is built as ``Driver(conf, host)``.

    Raises :class:`DriverNotFound` naming every missing driver, and lets
    an exception of a driver's constructor through (a broken driver stops
    the agent rather than hide its devices)."""
    names = list(names)
    missing = []

    def on_missing(names_missing):
        missing.extend(names_missing)

    manager = named.NamedExtensionManager(
        NAMESPACE,
        names,
        invoke_on_load=True,
        invoke_args=(conf, host),
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
    return [(ext.name, ext.obj) for ext in manager]


def _reraise(manager, entrypoint, exc):
    raise exc
