"""Overrides that push an in-process cloud's periodic work out of the way.

With these, what a test or a benchmark counts between a request and its
answer on :class:`nimbus.allinone.Cloud` is that request's work and nothing
else: no heartbeats, resource updates, conductor checks or scheduler
refreshes fall in between. Pass a copy as ``Cloud(overrides=...)`` (add a
``quota`` group to give the project limits); ``test_boot_budget.py`` pins
one boot's work with them, ``benchmarks/boot_work_bench.py`` times it.
"""

import copy

_QUIET = {
    'DEFAULT': {'report_interval': 600},
    'compute': {
        'update_resources_interval': 600,
        'provider_tree_refresh_interval': 600,
    },
    'conductor': {
        'build_check_interval': 0,
        'recovery_interval': 0,
        'audit_interval': 0,
    },
    'scheduler': {
        'host_state_refresh_interval': 600,
        'host_state_full_refresh_interval': 600,
    },
}


def quiet_overrides(**groups):
    """A fresh ``{group: {option: value}}`` of the quiet settings, with
    ``groups`` (e.g. ``quota={'instances': 10}``) added or replacing."""
    overrides = copy.deepcopy(_QUIET)
    overrides.update(groups)
    return overrides
