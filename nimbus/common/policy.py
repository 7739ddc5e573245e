"""oslo.policy enforcement shared by the REST APIs.

Each API declares its rules (``oslo_policy.policy.DocumentedRuleDefault``)
in its own ``policies`` module and builds one :class:`Enforcer` from the
config it is given. ``[oslo_policy] policy_file`` and
``enforce_new_defaults`` work as in every OpenStack service.
"""

from oslo_policy import policy as oslo_policy

from nimbus.common.wsgi import errors


def documented(name, check, description, operations, scope_types=None):
    """A documented rule (what the sample policy files list): ``operations``
    as ``(method, path)`` pairs; ``scope_types`` as oslo.policy's."""
    return oslo_policy.DocumentedRuleDefault(
        name=name,
        check_str=check,
        description=description,
        operations=[{'method': m, 'path': p} for m, p in operations],
        scope_types=scope_types,
    )


class Enforcer:
    def __init__(self, conf, rules):
        self._enforcer = oslo_policy.Enforcer(conf)
        self._enforcer.register_defaults(rules)

    def authorize(self, ctx, rule, target=None, code=None):
        """Raise 403 unless ``ctx`` may do ``rule`` on ``target``."""
        if target is None:
            target = {'project_id': ctx.project_id, 'user_id': ctx.user_id}
        try:
            allowed = self._enforcer.authorize(
                rule, target, ctx, do_raise=False
            )
        except oslo_policy.InvalidScope:
            allowed = False
        if not allowed:
            raise errors.HTTPError(
                403, 'Policy does not allow %s to be performed.' % rule, code
            )

    def check(self, ctx, rule, target=None):
        if target is None:
            target = {'project_id': ctx.project_id, 'user_id': ctx.user_id}
        try:
            return bool(
                self._enforcer.authorize(rule, target, ctx, do_raise=False)
            )
        except oslo_policy.InvalidScope:
            return False
