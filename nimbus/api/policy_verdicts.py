"""The compute API's policy enforcer: oslo.policy's verdicts, remembered.

oslo.policy reloads its rules and walks a rule's checks (inspecting each
check's signature) on every call: about half a millisecond of CPU per
check, several per request, so a watcher listing servers five times a
second spent more on policy than on its queries. :class:`Enforcer`
remembers each verdict by everything it depends on: the rule, the
caller's credentials (the context's policy values), the target, and the
rule set in force. oslo.policy is asked whether its policy file (or
directories) changed at most once per :attr:`Enforcer.reload_interval`
seconds, and each look forgets every verdict: a policy change is in force
within that interval, however oslo.policy applied it.
"""

import threading
import time

from oslo_policy import policy as oslo_policy

from nimbus.common import policy as common_policy
from nimbus.common.wsgi import errors

# Verdicts kept at most (forgotten all at once beyond: every key names a
# project and a user, so a large cloud would otherwise grow them forever).
MAX_VERDICTS = 10000


def _frozen(value):
    """``value`` as a hashable equivalent (lists and dicts of plain
    values), or raise TypeError."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    hash(value)
    return value


# What oslo.context's policy values are made of (besides the roles).
_POLICY_ATTRIBUTES = (
    'user_id',
    'user_domain_id',
    'system_scope',
    'domain_id',
    'project_id',
    'project_domain_id',
    'is_admin_project',
    'service_user_id',
    'service_user_domain_id',
    'service_project_id',
    'service_project_domain_id',
    'is_admin',
)


def _credentials(ctx):
    """The context's policy values, hashable: made once per context (a
    request checks several rules) while the attributes they come from
    are unchanged."""
    mark = (
        tuple(getattr(ctx, 'roles', None) or ()),
        tuple(getattr(ctx, 'service_roles', None) or ()),
    ) + tuple(getattr(ctx, name, None) for name in _POLICY_ATTRIBUTES)
    known = getattr(ctx, '_nimbus_policy_credentials', None)
    if known is not None and known[0] == mark:
        return known[1]
    values = _frozen(dict(ctx.to_policy_values()))
    try:
        ctx._nimbus_policy_credentials = (mark, values)
    except AttributeError:  # a context that takes no new attribute
        pass
    return values


class Enforcer(common_policy.Enforcer):
    """:class:`nimbus.common.policy.Enforcer` with remembered verdicts."""

    # Seconds between two looks at the policy file (oslo.policy's reload).
    reload_interval = 1.0

    def __init__(self, conf, rules):
        super().__init__(conf, rules)
        self._lock = threading.Lock()
        self._loaded_at = None
        self._rules = None  # the rule set the verdicts are of
        self._size = 0
        self._verdicts = {}

    def _current_rules(self):
        now = time.monotonic()
        if (
            self._loaded_at is None
            or now - self._loaded_at >= self.reload_interval
        ):
            self._enforcer.load_rules()
            self._loaded_at = now
            # Every look at the policy forgets the verdicts: oslo.policy
            # updates its rule set in place for a changed file of
            # policy_dirs, which neither its identity nor its size shows.
            with self._lock:
                self._verdicts = {}
        return self._enforcer.rules

    def _key(self, ctx, rule, target):
        try:
            return (rule, _credentials(ctx), _frozen(target))
        except TypeError:
            return None

    def _allowed(self, ctx, rule, target):
        if target is None:
            target = {'project_id': ctx.project_id, 'user_id': ctx.user_id}
        rules = self._current_rules()
        key = self._key(ctx, rule, target)
        with self._lock:
            if rules is not self._rules or len(rules) != self._size:
                self._verdicts = {}
                self._rules = rules
                self._size = len(rules)
            verdict = None if key is None else self._verdicts.get(key)
        if verdict is not None:
            return verdict
        try:
            verdict = bool(
                self._enforcer.authorize(rule, target, ctx, do_raise=False)
            )
        except oslo_policy.InvalidScope:
            verdict = False
        if key is not None:
            with self._lock:
                if self._rules is rules:
                    if len(self._verdicts) >= MAX_VERDICTS:
                        self._verdicts = {}
                    self._verdicts[key] = verdict
        return verdict

    def authorize(self, ctx, rule, target=None, code=None):
        if not self._allowed(ctx, rule, target):
            # The 403 of nimbus.common.policy.Enforcer.authorize.
            raise errors.HTTPError(
                403, 'Policy does not allow %s to be performed.' % rule, code
            )

    def check(self, ctx, rule, target=None):
        return self._allowed(ctx, rule, target)
