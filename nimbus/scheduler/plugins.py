"""Loading filters and weighers: stevedore entry points plus dotted class paths.

``[filter_scheduler] available_filters`` is a multi-valued option: each value is either
``nimbus.scheduler.filters.all_filters`` (a callable returning classes) or a dotted class
path (``acmefilter.AcmeFilter``). ``enabled_filters`` then names classes (by class name or
entry-point name) from that set, in order. ``weight_classes`` works the same way for
weighers (values may also be entry-point names).
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
    except (ImportError, AttributeError):  # pragma: no cover - other stevedore versions
        pass


def entry_point_classes(namespace: str) -> list:
    mgr = extension.ExtensionManager(namespace, invoke_on_load=False,
                                     on_load_failure_callback=_log_failure)
    return [ext.plugin for ext in mgr if inspect.isclass(ext.plugin)]


def entry_point_names(namespace: str) -> dict:
    mgr = extension.ExtensionManager(namespace, invoke_on_load=False,
                                     on_load_failure_callback=_log_failure)
    return {ext.name: ext.plugin for ext in mgr}


def _log_failure(manager, entrypoint, exc):
    LOG.warning("could not load plugin %s: %s", entrypoint, exc)


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
            raise TypeError(f"{path} is neither a class nor a callable")
    seen, uniq = set(), []
    for cls in out:
        if cls not in seen:
            seen.add(cls)
            uniq.append(cls)
    return uniq


def _instantiate(cls, conf):
    try:
        return cls(conf)
    except TypeError:
        obj = cls()
        obj.conf = conf
        return obj


def load_filters(conf) -> list:
    fs = conf.filter_scheduler
    available = resolve_classes(fs.available_filters)
    by_name = {cls.__name__: cls for cls in available}
    for name, plugin in entry_point_names("nimbus.scheduler.filters").items():
        if plugin in available:
            by_name.setdefault(name, plugin)
    out = []
    for name in fs.enabled_filters:
        cls = by_name.get(name)
        if cls is None:
            raise exception.FilterNotFound(
                f"filter {name!r} is enabled but not in available_filters")
        out.append(_instantiate(cls, conf))
    return out


def load_weighers(conf) -> list:
    eps = entry_point_names("nimbus.scheduler.weighers")
    classes = []
    for path in conf.filter_scheduler.weight_classes:
        if path in eps:
            classes.append(eps[path])
            continue
        try:
            classes.extend(resolve_classes([path]))
        except ImportError as exc:
            raise exception.WeigherNotFound(f"weigher {path!r} not found") from exc
    seen, out = set(), []
    for cls in classes:
        if cls not in seen:
            seen.add(cls)
            out.append(_instantiate(cls, conf))
    return out
