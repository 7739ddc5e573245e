"""The compute API's remembered policy verdicts (nimbus.api.policy_verdicts)
and the per-request memo of nimbus.api.util."""

import os
from unittest import mock

import pytest

from nimbus.api import policies
from nimbus.api import policy_verdicts
from nimbus.api import util
from nimbus.common import config
from nimbus.common.context import RequestContext
from nimbus.common.wsgi import errors

RULE = policies.SERVERS % 'create'
ADMIN_ONLY = policies.EXT_ATTRS


def _enforcer(tmp_path, policy_text=None):
    overrides = {}
    if policy_text is not None:
        path = tmp_path / 'policy.yaml'
        path.write_text(policy_text)
        overrides['oslo_policy'] = {'policy_file': str(path)}
    conf = config.build_conf([], overrides=overrides)
    return policy_verdicts.Enforcer(conf, policies.RULES)


def _member(project='p1', user='u1'):
    return RequestContext(user_id=user, project_id=project, roles=['member'])


def _admin():
    return RequestContext(
        user_id='admin', project_id='admin', roles=['admin'], is_admin=True
    )


def _counting(enforcer):
    return mock.patch.object(
        enforcer._enforcer, 'authorize', wraps=enforcer._enforcer.authorize
    )


def test_a_verdict_is_asked_of_oslo_policy_once(tmp_path):
    enforcer = _enforcer(tmp_path)
    ctx = _member()
    with _counting(enforcer) as asked:
        for _ in range(5):
            assert enforcer.check(ctx, RULE)
            enforcer.authorize(ctx, RULE)
    assert asked.call_count == 1


def test_verdicts_are_per_credentials_and_target(tmp_path):
    enforcer = _enforcer(tmp_path)
    target = {'project_id': 'p1'}
    assert not enforcer.check(_member(), ADMIN_ONLY, target)
    assert enforcer.check(_admin(), ADMIN_ONLY, target)
    # The same member on a project not its own: its own verdict.
    assert enforcer.check(_member('p1'), RULE, {'project_id': 'p1'})
    assert not enforcer.check(_member('p2'), RULE, {'project_id': 'p1'})
    with pytest.raises(errors.HTTPError) as raised:
        enforcer.authorize(_member('p2'), RULE, {'project_id': 'p1'})
    assert raised.value.status_int == 403
    assert RULE in raised.value.description


def test_a_changed_policy_file_is_seen_after_the_reload_interval(tmp_path):
    enforcer = _enforcer(tmp_path, '"%s": "@"\n' % RULE)
    enforcer.reload_interval = 0.0
    ctx = _member()
    assert enforcer.check(ctx, RULE)
    path = tmp_path / 'policy.yaml'
    path.write_text('"%s": "!"\n' % RULE)
    # oslo.policy notices a file change by its mtime.
    stat = path.stat()
    os.utime(path, (stat.st_atime + 10, stat.st_mtime + 10))
    assert not enforcer.check(ctx, RULE)


def test_a_rule_changed_in_a_policy_dir_is_seen_after_the_reload_interval(
    tmp_path,
):
    # oslo.policy applies a policy_dirs file to its rule set in place: the
    # same object, the same size.
    rules_dir = tmp_path / 'policy.d'
    rules_dir.mkdir()
    path = rules_dir / 'servers.yaml'
    path.write_text('"%s": "@"\n' % RULE)
    conf = config.build_conf(
        [], overrides={'oslo_policy': {'policy_dirs': [str(rules_dir)]}}
    )
    enforcer = policy_verdicts.Enforcer(conf, policies.RULES)
    enforcer.reload_interval = 0.0
    ctx = _member()
    assert enforcer.check(ctx, RULE)
    path.write_text('"%s": "!"\n' % RULE)
    stat = path.stat()
    os.utime(path, (stat.st_atime + 10, stat.st_mtime + 10))
    assert not enforcer.check(ctx, RULE)


class _Req:
    def __init__(self, deps, ctx):
        self.env = {util.ENV_KEY: deps}
        self.context = {'ctx': ctx}


def test_a_request_asks_the_enforcer_once_per_rule_and_target():
    policy = mock.Mock()
    policy.check.return_value = True
    deps = mock.Mock(policy=policy)
    req = _Req(deps, _member())
    for _ in range(10):
        assert util.can(req, ADMIN_ONLY, {'project_id': 'p1'})
        util.authorize(req, ADMIN_ONLY, {'project_id': 'p1'})
    assert util.can(req, ADMIN_ONLY, {'project_id': 'p2'})
    assert policy.check.call_count == 2
    policy.authorize.assert_not_called()
    # Another request asks again.
    assert util.can(_Req(deps, _member()), ADMIN_ONLY, {'project_id': 'p1'})
    assert policy.check.call_count == 3


def test_a_denied_authorize_still_raises_within_a_request():
    policy = mock.Mock()
    policy.check.return_value = False
    policy.authorize.side_effect = errors.HTTPError(403, 'no')
    req = _Req(mock.Mock(policy=policy), _member())
    assert not util.can(req, RULE)
    for _ in range(2):
        with pytest.raises(errors.HTTPError):
            util.authorize(req, RULE)


def test_a_context_whose_roles_change_is_judged_again(tmp_path):
    enforcer = _enforcer(tmp_path)
    ctx = _member()
    target = {'project_id': 'p1'}
    assert not enforcer.check(ctx, ADMIN_ONLY, target)
    ctx.roles = ['admin']
    ctx.is_admin = True
    assert enforcer.check(ctx, ADMIN_ONLY, target)
    ctx.roles.remove('admin')
    ctx.is_admin = False
    assert not enforcer.check(ctx, ADMIN_ONLY, target)
