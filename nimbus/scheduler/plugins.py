"""Loading filters and weighers: stevedore entry points plus dotted class paths.

``[filter_scheduler] available_filters`` is a multi-valued option: each value is
``nimbus.scheduler.filters.all_filters`` (a callable returning classes), a dotted class
path (``acmefilter.AcmeFilter``) or the name of an entry point in the
``nimbus.scheduler.filters`` namespace (``acme_filter``). ``enabled_filters`` then names
classes from that set (by class name or entry-point name), in order. ``weight_classes``
works the same way for weighers: ``all_weighers``, dotted paths or names of
``nimbus.scheduler.weighers`` entry points.
"""

from __future__ import annotations

import inspect

from oslo_log import log as logging
from oslo_utils import importutils
from stevedore import extension

from nimbus.scheduler import exception

LOG = logging.getLogger(__name__)


def reset_entry_point_cache() -> None:
    """Forget stevedore's in-process entry point cache (after a plugin was installed
    into the running interpreter's environment)."""
    extension.ExtensionManager.ENTRY_POINT_CACHE.clear()
    try:
        from stevedore import _cache

        _cache._c._internal.clear()
    except (
        ImportError,
        AttributeError,
    ):  # pragma: no cover - other stevedore versions
        pass


def entry_point_classes(namespace: str) -> list:
    mgr = extension.ExtensionManager(
        namespace, invoke_on_load=False, on_load_failure_callback=_log_failure
    )
    return [ext.plugin for ext in mgr if inspect.isclass(ext.plugin)]


def with_entry_points(builtin: list, namespace: str) -> list:
    """``builtin`` classes, then those of the entry points of
    ``namespace`` not among them."""
    classes = list(builtin)
    for cls in entry_point_classes(namespace):
        if cls not in classes:
            classes.append(cls)
    return classes


def entry_point_names(namespace: str) -> dict:
    mgr = extension.ExtensionManager(
        namespace, invoke_on_load=False, on_load_failure_callback=_log_failure
    )
    return {ext.name: ext.plugin for ext in mgr}


def _log_failure(manager, entrypoint, exc):
    LOG.warning('could not load plugin %s: %s', entrypoint, exc)


def resolve_classes(paths) -> list:
    """Expand each path: a callable returning classes, or a class."""
    out = []
    for path in paths:
        obj = importutils.import_class(path)
        if inspect.isclass(obj):
            out.append(obj)
        elif callable(obj):
            out.extend(obj())
        else:
            raise TypeError(f'{path} is neither a class nor a callable')
    return _unique(out)


def _unique(classes) -> list:
    """``classes`` without repeats, in first-seen order."""
    return list(dict.fromkeys(classes))


def _instantiate(cls, conf):
    try:
        return cls(conf)
    except TypeError:
        obj = cls()
        obj.conf = conf
        return obj


FILTERS_NAMESPACE = 'nimbus.scheduler.filters'
WEIGHERS_NAMESPACE = 'nimbus.scheduler.weighers'


def _resolve(values, namespace, not_found) -> list:
    """Classes named by ``values``: entry-point names of ``namespace`` first, then
    dotted paths of classes or of callables returning classes. Unknown -> ``not_found``."""
    eps = entry_point_names(namespace)
    out = []
    for value in values:
        if value in eps:
            plugin = eps[value]
            if not inspect.isclass(plugin):
                raise not_found(
                    f'entry point {value!r} of {namespace} is not a class'
                )
            out.append(plugin)
            continue
        try:
            out.extend(resolve_classes([value]))
        except (ImportError, ValueError, AttributeError, TypeError) as exc:
            raise not_found(
                f'{value!r} is neither an entry point of {namespace} nor an importable '
                f'class or callable ({exc})'
            ) from exc
    return _unique(out)


def available_filter_classes(conf) -> dict:
    """``{name: class}`` of every available filter, under its class name and, for
    entry points, under the entry-point name too."""
    available = _resolve(
        conf.filter_scheduler.available_filters,
        FILTERS_NAMESPACE,
        exception.FilterNotFound,
    )
    by_name = {cls.__name__: cls for cls in available}
    for name, plugin in entry_point_names(FILTERS_NAMESPACE).items():
        if plugin in available:
            by_name.setdefault(name, plugin)
    return by_name


def load_filters(conf) -> list:
    fs = conf.filter_scheduler
    by_name = available_filter_classes(conf)
    out = []
    for name in fs.enabled_filters:
        cls = by_name.get(name)
        if cls is None:
            raise exception.FilterNotFound(
                f'filter {name!r} is enabled but not in available_filters'
            )
        out.append(_instantiate(cls, conf))
    return out


def load_weighers(conf) -> list:
    classes = _resolve(
        conf.filter_scheduler.weight_classes,
        WEIGHERS_NAMESPACE,
        exception.WeigherNotFound,
    )
    return [_instantiate(cls, conf) for cls in classes]
